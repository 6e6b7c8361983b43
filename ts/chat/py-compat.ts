/**
 * The few Python behaviours the official chat template relies on (it runs in Python jinja2 inside
 * transformers): str.strip's whitespace set and json.dumps(ensure_ascii=False) formatting.
 */

/** Python's str.isspace() characters (differs from JS trim: adds \x1c-\x1f and \x85, lacks \ufeff). */
const PY_WS = '\\t\\n\\v\\f\\r\\x1c-\\x1f \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000';
const LEAD = new RegExp(`^[${PY_WS}]+`, 'u');
const TRAIL = new RegExp(`[${PY_WS}]+$`, 'u');

export function pyStrip(s: string): string {
  return s.replace(LEAD, '').replace(TRAIL, '');
}

export function rstripChars(s: string, ch: string): string {
  let e = s.length;
  while (e > 0 && ch.includes(s[e - 1])) e--;
  return s.slice(0, e);
}

export function lstripChars(s: string, ch: string): string {
  let b = 0;
  while (b < s.length && ch.includes(s[b])) b++;
  return s.slice(b);
}

function pyString(s: string): string {
  let out = '"';
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    switch (c) {
      case 0x22: out += '\\"'; break;
      case 0x5c: out += '\\\\'; break;
      case 0x0a: out += '\\n'; break;
      case 0x0d: out += '\\r'; break;
      case 0x09: out += '\\t'; break;
      case 0x08: out += '\\b'; break;
      case 0x0c: out += '\\f'; break;
      default: out += c < 0x20 ? `\\u${c.toString(16).padStart(4, '0')}` : s[i];
    }
  }
  return out + '"';
}

/** Python float repr: shortest round-trip digits, exponent form when exp < -4 or exp >= 16. */
function pyFloat(x: number): string {
  if (Number.isNaN(x)) return 'NaN';
  if (!Number.isFinite(x)) return x > 0 ? 'Infinity' : '-Infinity';
  const [mant, expStr] = x.toExponential().split('e');
  const exp = Number(expStr);
  const neg = mant.startsWith('-');
  const digits = mant.replace('-', '').replace('.', '');
  let body: string;
  if (exp < -4 || exp >= 16) {
    const m = digits.length > 1 ? `${digits[0]}.${digits.slice(1)}` : digits;
    body = `${m}e${exp < 0 ? '-' : '+'}${String(Math.abs(exp)).padStart(2, '0')}`;
  } else if (exp < 0) {
    body = `0.${'0'.repeat(-exp - 1)}${digits}`;
  } else {
    const intPart = digits.slice(0, exp + 1).padEnd(exp + 1, '0');
    const frac = digits.slice(exp + 1);
    body = `${intPart}.${frac || '0'}`;
  }
  return (neg ? '-' : '') + body;
}

/**
 * json.dumps(x, ensure_ascii=False) as transformers' `tojson` filter produces it: ", " and ": "
 * separators, key order kept, non-ASCII unescaped. JS numbers that are safe integers print as
 * Python ints (JSON cannot tell 2 from 2.0 once parsed); larger ones as Python floats.
 */
export function pyJson(x: unknown): string {
  if (x === null || x === undefined) return 'null';
  if (typeof x === 'string') return pyString(x);
  if (typeof x === 'boolean') return x ? 'true' : 'false';
  if (typeof x === 'number') return Number.isSafeInteger(x) ? String(x) : pyFloat(x);
  if (typeof x === 'bigint') return x.toString();
  if (Array.isArray(x)) return `[${x.map(pyJson).join(', ')}]`;
  if (typeof x === 'object') {
    return `{${Object.entries(x as Record<string, unknown>).map(([k, v]) => `${pyString(k)}: ${pyJson(v)}`).join(', ')}}`;
  }
  throw new TypeError(`Object of type ${typeof x} is not JSON serializable`);
}
