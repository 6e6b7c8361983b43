/**
 * JSON Schema → the value grammar the matcher walks: a graph of nodes, one per distinct schema
 * (so $ref recursion is a cycle, not an infinite tree). Covers the subset agents and SDKs send;
 * every keyword outside it is refused by name (SchemaError), never ignored, so a schema that
 * asks for something the decoder cannot enforce fails the request instead of being answered
 * with output that does not validate.
 */
import { compileRegex, formatRegex, type Regex } from './regex.js';

export class SchemaError extends Error {
  constructor(message: string, readonly keyword?: string) {
    super(message);
  }
}

export type Node =
  | { k: 'obj'; names: string[]; enc: Uint8Array[]; props: Node[]; required: boolean[]; nRequired: number; extra: Node | null; minP: number; maxP: number }
  | { k: 'arr'; prefix: Node[]; items: Node | null; min: number; max: number }
  | { k: 'str'; minLen: number; maxLen: number; re: Regex | null }
  | { k: 'num'; int: boolean; lo: number; hi: number; loEx: boolean; hiEx: boolean }
  | { k: 'lit'; values: Uint8Array[] }
  | { k: 'alt'; alts: Node[] };

/** Keywords that only describe (no effect on which values are valid). */
const ANNOTATIONS = new Set(['title', 'description', 'default', 'examples', 'example', '$schema', '$id', '$comment', 'deprecated', 'readOnly', 'writeOnly', 'discriminator', 'contentMediaType', 'contentEncoding', 'strict', 'name', 'x-order']);
const HANDLED = new Set(['type', 'properties', 'required', 'additionalProperties', 'items', 'prefixItems', 'additionalItems', 'minItems', 'maxItems', 'enum', 'const', 'pattern', 'format', 'minLength', 'maxLength', 'minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'anyOf', 'oneOf', 'allOf', '$ref', '$defs', 'definitions', 'nullable', 'minProperties', 'maxProperties', 'uniqueItems', 'unevaluatedProperties']);
const TYPES = ['object', 'array', 'string', 'number', 'integer', 'boolean', 'null'] as const;
type JType = (typeof TYPES)[number];

const enc = new TextEncoder();
const NO_MAX = Number.MAX_SAFE_INTEGER;

/** The schema of "any JSON value" (json_object mode's members, `{}`, `true`). */
export function anyValue(): Node {
  const any = { k: 'alt', alts: [] } as unknown as Node & { k: 'alt' };
  const obj: Node = { k: 'obj', names: [], enc: [], props: [], required: [], nRequired: 0, extra: any, minP: 0, maxP: NO_MAX };
  const arr: Node = { k: 'arr', prefix: [], items: any, min: 0, max: NO_MAX };
  any.alts.push(obj, arr, { k: 'str', minLen: 0, maxLen: NO_MAX, re: null }, { k: 'num', int: false, lo: -Infinity, hi: Infinity, loEx: false, hiEx: false }, { k: 'lit', values: ['true', 'false', 'null'].map((s) => enc.encode(s)) });
  return any;
}

/** json_object mode: an object with any members. */
export function anyObject(): Node {
  return (anyValue() as Node & { k: 'alt' }).alts[0];
}

type Obj = Record<string, unknown>;

/** Compiles a schema (an object or boolean); throws SchemaError naming what it cannot enforce. */
export function compileSchema(root: unknown): Node {
  const memo = new Map<unknown, Node>();
  let any: Node | undefined;
  const anyNode = () => (any ??= anyValue());

  const resolve = (ref: string, at: string): unknown => {
    if (!ref.startsWith('#')) throw new SchemaError(`${at}: $ref ${JSON.stringify(ref)} is not supported (only references inside the schema, "#/…")`, '$ref');
    let cur: unknown = root;
    for (const raw of ref.slice(1).split('/').slice(1)) {
      const key = decodeURIComponent(raw).replace(/~1/g, '/').replace(/~0/g, '~');
      if (!cur || typeof cur !== 'object' || !(key in (cur as Obj))) throw new SchemaError(`${at}: $ref ${JSON.stringify(ref)} points nowhere`, '$ref');
      cur = (cur as Obj)[key];
    }
    return cur;
  };

  const build = (s: unknown, at: string, depth: number): Node => {
    if (depth > 64) throw new SchemaError(`${at}: schema nested too deep (over 64 levels of $ref/anyOf)`);
    if (s === true) return anyNode();
    if (s === false) throw new SchemaError(`${at}: the schema false accepts no value`);
    if (!s || typeof s !== 'object' || Array.isArray(s)) throw new SchemaError(`${at}: a schema must be an object or a boolean`);
    const hit = memo.get(s);
    if (hit) return hit;
    // a reference (or an allOf of one schema) is the node it names: the same object, so
    // recursion closes a cycle
    const o = s as Obj;
    if (o.$ref !== undefined) {
      if (typeof o.$ref !== 'string') throw new SchemaError(`${at}: $ref must be a string`, '$ref');
      const others = Object.keys(o).filter((k) => !ANNOTATIONS.has(k) && k !== '$ref' && k !== '$defs' && k !== 'definitions');
      if (others.length) throw new SchemaError(`${at}: "${others[0]}" beside $ref is not supported`, others[0]);
      return build(resolve(o.$ref, at), o.$ref, depth + 1);
    }
    if (o.allOf !== undefined) {
      if (!Array.isArray(o.allOf) || o.allOf.length !== 1) throw new SchemaError(`${at}: JSON Schema keyword "allOf" is supported with one schema only`, 'allOf');
      const others = Object.keys(o).filter((k) => !ANNOTATIONS.has(k) && k !== 'allOf' && k !== '$defs' && k !== 'definitions');
      if (others.length) throw new SchemaError(`${at}: "${others[0]}" beside allOf is not supported`, others[0]);
      return build(o.allOf[0], `${at}/allOf/0`, depth + 1);
    }
    const node = {} as Node;
    memo.set(s, node);
    Object.assign(node, make(s as Obj, at, depth));
    return node;
  };

  const make = (s: Obj, at: string, depth: number): Node => {
    for (const k of Object.keys(s)) {
      if (ANNOTATIONS.has(k) || HANDLED.has(k) || k.startsWith('x-')) continue;
      throw new SchemaError(`${at}: JSON Schema keyword "${k}" is not supported`, k);
    }
    if (s.uniqueItems === true) throw new SchemaError(`${at}: JSON Schema keyword "uniqueItems" is not supported`, 'uniqueItems');
    if (s.unevaluatedProperties !== undefined && s.unevaluatedProperties !== false) throw new SchemaError(`${at}: JSON Schema keyword "unevaluatedProperties" is supported as false only`, 'unevaluatedProperties');
    for (const kw of ['anyOf', 'oneOf'] as const) {
      if (s[kw] === undefined) continue;
      const list = s[kw];
      if (!Array.isArray(list) || list.length === 0) throw new SchemaError(`${at}: ${kw} must be a non-empty array`, kw);
      const others = Object.keys(s).filter((k) => !ANNOTATIONS.has(k) && k !== kw && k !== '$defs' && k !== 'definitions' && k !== 'nullable');
      if (others.length) throw new SchemaError(`${at}: "${others[0]}" beside ${kw} is not supported`, others[0]);
      const alts = list.map((x, i) => build(x, `${at}/${kw}/${i}`, depth + 1));
      if (s.nullable === true) alts.push({ k: 'lit', values: [enc.encode('null')] });
      // oneOf means exactly one: enforced when no value can match two alternatives
      if (kw === 'oneOf') checkDisjoint(alts, at);
      return { k: 'alt', alts };
    }
    let types: JType[];
    if (s.type === undefined) types = [...TYPES].filter((t) => t !== 'integer');
    else {
      const list = Array.isArray(s.type) ? s.type : [s.type];
      for (const t of list) if (!TYPES.includes(t as JType)) throw new SchemaError(`${at}: type ${JSON.stringify(t)} is not a JSON Schema type`, 'type');
      types = list as JType[];
      if (types.length === 0) throw new SchemaError(`${at}: type [] accepts no value`, 'type');
    }
    if (s.nullable === true && !types.includes('null')) types = [...types, 'null'];
    if (s.const !== undefined || s.enum !== undefined) {
      const values = s.const !== undefined ? [s.const] : s.enum;
      if (!Array.isArray(values) || values.length === 0) throw new SchemaError(`${at}: enum must be a non-empty array`, 'enum');
      const ok = values.filter((v) => types.includes(jsonType(v)) || (jsonType(v) === 'integer' && types.includes('number')) || (v === null && s.nullable === true));
      if (!ok.length) throw new SchemaError(`${at}: no enum/const value has the schema's type`, 'enum');
      return { k: 'lit', values: ok.map((v) => enc.encode(JSON.stringify(v))) };
    }
    const alts: Node[] = [];
    for (const t of types) {
      if (t === 'object') alts.push(object(s, at, depth));
      else if (t === 'array') alts.push(array(s, at, depth));
      else if (t === 'string') alts.push(string(s, at));
      else if (t === 'number' || t === 'integer') {
        if (t === 'number' || !types.includes('number')) alts.push(number(s, at, t === 'integer'));
      } else if (t === 'boolean') alts.push({ k: 'lit', values: [enc.encode('true'), enc.encode('false')] });
      else alts.push({ k: 'lit', values: [enc.encode('null')] });
    }
    return alts.length === 1 ? alts[0] : { k: 'alt', alts };
  };

  const count = (s: Obj, key: string, at: string, dflt: number): number => {
    const v = s[key];
    if (v === undefined) return dflt;
    if (typeof v !== 'number' || !Number.isInteger(v) || v < 0) throw new SchemaError(`${at}: ${key} must be a non-negative integer`, key);
    return v;
  };

  const object = (s: Obj, at: string, depth: number): Node => {
    const props = (s.properties ?? {}) as Obj;
    if (typeof props !== 'object' || Array.isArray(props)) throw new SchemaError(`${at}: properties must be an object`, 'properties');
    const names = Object.keys(props);
    const req = s.required ?? [];
    if (!Array.isArray(req) || req.some((r) => typeof r !== 'string')) throw new SchemaError(`${at}: required must be an array of names`, 'required');
    const missing = (req as string[]).find((r) => !names.includes(r));
    const ap = s.additionalProperties;
    // a required name without a schema of its own takes the additional properties' schema
    if (missing !== undefined && (ap === undefined || ap === false)) throw new SchemaError(`${at}: required property ${JSON.stringify(missing)} has no schema in properties and additionalProperties does not allow it`, 'required');
    const allNames = [...names, ...(req as string[]).filter((r) => !names.includes(r))];
    // additional members: only when asked for (true or a schema); a schema that leaves it out is
    // answered without extra members, which validates either way
    const extra = ap === true ? anyNode() : ap && typeof ap === 'object' ? build(ap, `${at}/additionalProperties`, depth + 1) : null;
    const node: Node = {
      k: 'obj',
      names: allNames,
      enc: allNames.map((n) => enc.encode(JSON.stringify(n).slice(1, -1))),
      props: allNames.map((n) => (n in props ? build(props[n], `${at}/properties/${n}`, depth + 1) : extra!)),
      required: allNames.map((n) => (req as string[]).includes(n)),
      nRequired: new Set(req as string[]).size,
      extra,
      minP: count(s, 'minProperties', at, 0),
      maxP: count(s, 'maxProperties', at, NO_MAX),
    };
    if (node.nRequired > node.maxP) throw new SchemaError(`${at}: more required properties than maxProperties`, 'maxProperties');
    if (!extra && node.minP > allNames.length) throw new SchemaError(`${at}: minProperties exceeds the properties allowed`, 'minProperties');
    return node;
  };

  const array = (s: Obj, at: string, depth: number): Node => {
    let prefix: Node[] = [];
    let items: Node | null = anyNode();
    if (Array.isArray(s.prefixItems)) prefix = s.prefixItems.map((x, i) => build(x, `${at}/prefixItems/${i}`, depth + 1));
    if (Array.isArray(s.items)) {
      // draft 4–7 tuple form
      prefix = s.items.map((x, i) => build(x, `${at}/items/${i}`, depth + 1));
      items = s.additionalItems === undefined || s.additionalItems === true ? anyNode() : s.additionalItems === false ? null : build(s.additionalItems, `${at}/additionalItems`, depth + 1);
    } else if (s.items !== undefined) items = s.items === false ? null : build(s.items, `${at}/items`, depth + 1);
    const min = count(s, 'minItems', at, 0), max = count(s, 'maxItems', at, NO_MAX);
    if (min > max) throw new SchemaError(`${at}: minItems exceeds maxItems`, 'minItems');
    if (items === null && min > prefix.length) throw new SchemaError(`${at}: minItems exceeds the items allowed`, 'minItems');
    return { k: 'arr', prefix, items, min, max: items === null ? Math.min(max, prefix.length) : max };
  };

  const string = (s: Obj, at: string): Node => {
    const minLen = count(s, 'minLength', at, 0), maxLen = count(s, 'maxLength', at, NO_MAX);
    if (minLen > maxLen) throw new SchemaError(`${at}: minLength exceeds maxLength`, 'minLength');
    if (s.pattern !== undefined && s.format !== undefined) throw new SchemaError(`${at}: "pattern" together with "format" is not supported`, 'format');
    let re: Regex | null = null;
    if (s.pattern !== undefined) {
      if (typeof s.pattern !== 'string') throw new SchemaError(`${at}: pattern must be a string`, 'pattern');
      try { re = compileRegex(s.pattern); } catch (e) { throw new SchemaError(`${at}: pattern ${JSON.stringify(s.pattern)}: ${(e as Error).message}`, 'pattern'); }
    } else if (s.format !== undefined) {
      const f = formatRegex(String(s.format));
      if (!f) throw new SchemaError(`${at}: format ${JSON.stringify(s.format)} is not supported`, 'format');
      re = f;
    }
    return { k: 'str', minLen, maxLen, re };
  };

  const number = (s: Obj, at: string, int: boolean): Node => {
    const num = (key: string): number | undefined => {
      const v = s[key];
      if (v === undefined || typeof v === 'boolean') return undefined;
      if (typeof v !== 'number' || !Number.isFinite(v)) throw new SchemaError(`${at}: ${key} must be a number`, key);
      return v;
    };
    let lo = num('minimum') ?? -Infinity, hi = num('maximum') ?? Infinity, loEx = false, hiEx = false;
    const xlo = num('exclusiveMinimum'), xhi = num('exclusiveMaximum');
    if (s.exclusiveMinimum === true) loEx = true; // draft 4: a flag on minimum
    if (s.exclusiveMaximum === true) hiEx = true;
    if (xlo !== undefined && xlo >= lo) { lo = xlo; loEx = true; }
    if (xhi !== undefined && xhi <= hi) { hi = xhi; hiEx = true; }
    const n: Node = { k: 'num', int, lo, hi, loEx, hiEx };
    if (lo > hi || (lo === hi && (loEx || hiEx)) || (int && Math.ceil(loEx ? Math.floor(lo) + 1 : lo) > Math.floor(hiEx ? Math.ceil(hi) - 1 : hi))) throw new SchemaError(`${at}: no number lies between the bounds`, 'minimum');
    return n;
  };

  return build(root, '#', 0);
}

function jsonType(v: unknown): JType {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'number') return Number.isInteger(v) ? 'integer' : 'number';
  return typeof v as JType;
}

/** The JSON types a node can produce ('integer' counted as 'number'). */
function kinds(n: Node, seen = new Set<Node>()): Set<string> {
  if (seen.has(n)) return new Set();
  seen.add(n);
  switch (n.k) {
    case 'obj': return new Set(['object']);
    case 'arr': return new Set(['array']);
    case 'str': return new Set(['string']);
    case 'num': return new Set(['number']);
    case 'lit': return new Set(n.values.map((v) => { const t = jsonType(JSON.parse(new TextDecoder().decode(v))); return t === 'integer' ? 'number' : t; }));
    case 'alt': return new Set(n.alts.flatMap((a) => [...kinds(a, seen)]));
  }
}

/**
 * oneOf is generated as a choice; that is exact when no value can satisfy two alternatives:
 * their JSON types are disjoint, or all are objects told apart by a required property whose
 * const/enum values differ. Anything else is refused (anyOf says what such schemas mean).
 */
function checkDisjoint(alts: Node[], at: string): void {
  const sets = alts.map((a) => kinds(a));
  let disjoint = true;
  for (let i = 0; i < sets.length && disjoint; i++) for (let j = i + 1; j < sets.length && disjoint; j++) for (const t of sets[i]) if (sets[j].has(t)) disjoint = false;
  if (disjoint) return;
  if (alts.every((a) => a.k === 'obj')) {
    const objs = alts as (Node & { k: 'obj' })[];
    for (const name of objs[0].names) {
      const vals: string[][] = [];
      for (const o of objs) {
        const i = o.names.indexOf(name);
        if (i < 0 || !o.required[i] || o.props[i].k !== 'lit') break;
        vals.push((o.props[i] as Node & { k: 'lit' }).values.map((v) => new TextDecoder().decode(v)));
      }
      if (vals.length === objs.length && new Set(vals.flat()).size === vals.flat().length) return;
    }
  }
  throw new SchemaError(`${at}: oneOf alternatives that one value could match at once are not supported (use anyOf, or tell them apart by type or a const property)`, 'oneOf');
}
