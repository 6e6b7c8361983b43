/**
 * A JSON Schema validator for the tests, written from the specification (draft 2020-12 and the
 * draft-4 spellings agents still send) and independent of ts/grammar: it checks finished values,
 * with JavaScript's own RegExp for patterns and date checks by the calendar. Returns the first
 * violation's path and reason, or null.
 */

type Obj = Record<string, unknown>;

function deepEqual(a: unknown, b: unknown): boolean {
  return JSON.stringify(canon(a)) === JSON.stringify(canon(b));
}
function canon(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(canon);
  if (v && typeof v === 'object') return Object.fromEntries(Object.keys(v as Obj).sort().map((k) => [k, canon((v as Obj)[k])]));
  return v;
}

function typeOk(v: unknown, t: string): boolean {
  switch (t) {
    case 'null': return v === null;
    case 'boolean': return typeof v === 'boolean';
    case 'number': return typeof v === 'number' && Number.isFinite(v);
    case 'integer': return typeof v === 'number' && Number.isInteger(v);
    case 'string': return typeof v === 'string';
    case 'array': return Array.isArray(v);
    case 'object': return !!v && typeof v === 'object' && !Array.isArray(v);
  }
  return false;
}

function daysIn(y: number, m: number): number {
  return new Date(Date.UTC(y, m, 0)).getUTCDate();
}

const FORMAT: Record<string, (s: string) => boolean> = {
  date: (s) => { const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(s); return !!m && +m[2] >= 1 && +m[2] <= 12 && +m[3] >= 1 && +m[3] <= daysIn(+m[1], +m[2]); },
  time: (s) => /^([01]\d|2[0-3]):[0-5]\d:[0-5]\d(\.\d+)?(Z|z|[+-]([01]\d|2[0-3]):[0-5]\d)$/.test(s),
  'date-time': (s) => { const i = s.search(/[Tt]/); return i > 0 && FORMAT.date(s.slice(0, i)) && FORMAT.time(s.slice(i + 1)); },
  uuid: (s) => /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/.test(s),
  email: (s) => /^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(s),
  ipv4: (s) => { const p = s.split('.'); return p.length === 4 && p.every((x) => /^(0|[1-9]\d{0,2})$/.test(x) && +x <= 255); },
  uri: (s) => { try { return !!new URL(s).protocol; } catch { return false; } },
};

export function validate(value: unknown, schema: unknown, root: unknown = schema, at = '#'): string | null {
  if (schema === true || schema === undefined) return null;
  if (schema === false) return `${at}: false schema`;
  const s = schema as Obj;
  if (typeof s.$ref === 'string') {
    let cur: unknown = root;
    for (const part of s.$ref.slice(2).split('/').filter(Boolean)) cur = (cur as Obj)[part];
    const e = validate(value, cur, root, at);
    if (e) return e;
  }
  if (s.type !== undefined || s.nullable === true) {
    const types = s.type === undefined ? [] : Array.isArray(s.type) ? s.type : [s.type];
    if (s.nullable === true) types.push('null');
    if (types.length && !types.some((t) => typeOk(value, t as string))) return `${at}: not of type ${types.join('|')}`;
  }
  if (s.const !== undefined && !deepEqual(value, s.const)) return `${at}: not the const`;
  if (Array.isArray(s.enum) && !s.enum.some((e) => deepEqual(value, e)) && !(s.nullable === true && value === null)) return `${at}: not in the enum`;
  if (Array.isArray(s.anyOf) && !s.anyOf.some((x) => validate(value, x, root, at) === null)) return `${at}: no anyOf alternative matches`;
  if (Array.isArray(s.oneOf) && s.oneOf.filter((x) => validate(value, x, root, at) === null).length !== 1) return `${at}: not exactly one oneOf alternative matches`;
  if (Array.isArray(s.allOf)) for (const x of s.allOf) { const e = validate(value, x, root, at); if (e) return e; }
  if (typeof value === 'number') {
    if (typeof s.minimum === 'number' && (s.exclusiveMinimum === true ? value <= s.minimum : value < s.minimum)) return `${at}: below minimum`;
    if (typeof s.maximum === 'number' && (s.exclusiveMaximum === true ? value >= s.maximum : value > s.maximum)) return `${at}: above maximum`;
    if (typeof s.exclusiveMinimum === 'number' && value <= s.exclusiveMinimum) return `${at}: not above exclusiveMinimum`;
    if (typeof s.exclusiveMaximum === 'number' && value >= s.exclusiveMaximum) return `${at}: not below exclusiveMaximum`;
  }
  if (typeof value === 'string') {
    const len = [...value].length;
    if (typeof s.minLength === 'number' && len < s.minLength) return `${at}: shorter than minLength`;
    if (typeof s.maxLength === 'number' && len > s.maxLength) return `${at}: longer than maxLength`;
    if (typeof s.pattern === 'string' && !new RegExp(s.pattern, 'u').test(value)) return `${at}: does not match pattern ${s.pattern}`;
    if (typeof s.format === 'string' && FORMAT[s.format] && !FORMAT[s.format](value)) return `${at}: not a ${s.format}`;
  }
  if (Array.isArray(value)) {
    if (typeof s.minItems === 'number' && value.length < s.minItems) return `${at}: fewer than minItems`;
    if (typeof s.maxItems === 'number' && value.length > s.maxItems) return `${at}: more than maxItems`;
    const prefix = Array.isArray(s.prefixItems) ? s.prefixItems : Array.isArray(s.items) ? s.items : [];
    const rest = Array.isArray(s.items) ? s.additionalItems : s.items;
    for (let i = 0; i < value.length; i++) {
      const e = validate(value[i], i < prefix.length ? prefix[i] : rest, root, `${at}/${i}`);
      if (e) return e;
    }
  }
  if (value && typeof value === 'object' && !Array.isArray(value)) {
    const v = value as Obj, props = (s.properties ?? {}) as Obj, keys = Object.keys(v);
    if (Array.isArray(s.required)) for (const r of s.required) if (!(r in v)) return `${at}: missing required ${r}`;
    if (typeof s.minProperties === 'number' && keys.length < s.minProperties) return `${at}: fewer than minProperties`;
    if (typeof s.maxProperties === 'number' && keys.length > s.maxProperties) return `${at}: more than maxProperties`;
    for (const k of keys) {
      const sub = k in props ? props[k] : s.additionalProperties;
      if (sub === false) return `${at}: extra property ${k}`;
      const e = validate(v[k], sub, root, `${at}/${k}`);
      if (e) return e;
    }
  }
  return null;
}
