/** Random JSON Schemas of the supported subset, for the constrained-decoding fuzz tests (seeded). */
type Rand = () => number;
const PATTERNS = ['^[a-z]{2,6}$', '^\\d{3}-\\d{4}$', '^(yes|no|maybe)$', 'ab+c', '^[A-Z][a-z]*( [A-Z][a-z]*)?$', '^#[0-9a-f]{6}$'];
const FORMATS = ['date', 'time', 'date-time', 'uuid', 'email', 'ipv4', 'uri'];

function genSchema(r: Rand, depth: number, defs: Record<string, unknown>): Record<string, unknown> {
  const pick = <T>(xs: T[]): T => xs[Math.floor(r() * xs.length)];
  const leaf = depth >= 2;
  const kind = pick(leaf ? ['string', 'integer', 'number', 'boolean', 'null', 'enum', 'const', 'pattern', 'format'] : ['object', 'object', 'array', 'anyOf', 'oneOf', 'string', 'integer', 'number', 'enum', 'pattern', 'format', 'nullable', 'ref']);
  switch (kind) {
    case 'string': { const s: Record<string, unknown> = { type: 'string' }; if (r() < 0.5) s.maxLength = 1 + Math.floor(r() * 8); if (r() < 0.3) s.minLength = Math.floor(r() * ((s.maxLength as number) ?? 4)); return s; }
    case 'integer': { const lo = Math.floor(r() * 200) - 100; return r() < 0.7 ? { type: 'integer', minimum: lo, maximum: lo + Math.floor(r() * 1000) } : { type: 'integer' }; }
    case 'number': { const lo = r() * 10 - 5; return r() < 0.5 ? { type: 'number', exclusiveMinimum: lo, maximum: lo + 1 + r() * 3 } : { type: 'number' }; }
    case 'boolean': return { type: 'boolean' };
    case 'null': return { type: 'null' };
    case 'enum': return { enum: pick([['red', 'green', 'blue'], [1, 2, 3, 10, 12], ['a', 1, null, true], ['x"y', 'back\\slash', 'ünï']]) };
    case 'const': return { const: pick(['fixed', 42, false, { k: [1, 'v'] }]) };
    case 'pattern': return { type: 'string', pattern: pick(PATTERNS) };
    case 'format': return { type: 'string', format: pick(FORMATS) };
    case 'nullable': return { type: pick(['string', 'integer', 'boolean']), nullable: true };
    case 'array': {
      const min = Math.floor(r() * 3);
      return { type: 'array', items: genSchema(r, depth + 1, defs), minItems: min, maxItems: min + Math.floor(r() * 3) };
    }
    case 'anyOf': return { anyOf: [genSchema(r, depth + 1, defs), genSchema(r, depth + 1, defs)] };
    case 'oneOf': return { oneOf: [{ type: 'string', maxLength: 5 }, { type: 'integer', minimum: 0 }, { type: 'array', items: { type: 'boolean' }, maxItems: 2 }].slice(0, 2 + Math.floor(r() * 2)) };
    case 'ref': {
      const name = `d${Object.keys(defs).length}`;
      defs[name] = {}; // reserved before the definition's own references are made
      defs[name] = genSchema(r, depth + 1, defs);
      return { $ref: `#/$defs/${name}` };
    }
    default: {
      const n = 1 + Math.floor(r() * 4), properties: Record<string, unknown> = {}, required: string[] = [];
      for (let i = 0; i < n; i++) { const k = pick(['id', 'name', 'count', 'tags', 'ok', 'value', 'when', 'kind', 'ñame']) + i; properties[k] = genSchema(r, depth + 1, defs); if (r() < 0.6) required.push(k); }
      const s: Record<string, unknown> = { type: 'object', properties, required };
      const ap = r();
      if (ap < 0.4) s.additionalProperties = false;
      else if (ap < 0.5) s.additionalProperties = { type: 'integer' };
      else if (ap < 0.55) s.additionalProperties = true;
      return s;
    }
  }
}

export function genSchemas(seed: number, n: number): Record<string, unknown>[] {
  let x = seed >>> 0;
  const r: Rand = () => ((x = (Math.imul(x, 1103515245) + 12345) >>> 0) / 2 ** 32);
  const out: Record<string, unknown>[] = [];
  for (let i = 0; i < n; i++) {
    const defs: Record<string, unknown> = {};
    const s = r() < 0.8 ? genSchema(r, 0, defs) : genSchema(r, 1, defs);
    out.push(Object.keys(defs).length ? { ...s, $defs: defs } : s);
  }
  return out;
}

