/**
 * Input checks that must run before any handler touches a body: JSON parsed with a nesting bound
 * (deep nesting would overflow the stack of every recursive walk after it), and tool JSON Schemas
 * checked structurally (the output parser and the template walk them; a null or a number where a
 * schema belongs is the client's mistake and gets a 400 naming the place, not a 500).
 */
import sjson from 'secure-json-parse';
import { ApiError, isObj } from './errors.js';
import { MAX_JSON_DEPTH, jsonDepth } from '../json-depth.js';

export { MAX_JSON_DEPTH, jsonDepth };

/**
 * The body parsed behind the depth bound by fastify's own JSON parser (secure-json-parse), which
 * refuses `__proto__` and `constructor.prototype` keys as fastify does by default: a 400, not a
 * body quietly changed.
 */
export function parseJsonBody(text: string, maxDepth = MAX_JSON_DEPTH): unknown {
  if (text.trim() === '') throw new ApiError('invalid_json', 'the request body is empty: send a JSON object');
  if (jsonDepth(text, maxDepth) > maxDepth) throw new ApiError('invalid_json', `the JSON body is nested deeper than ${maxDepth} levels`);
  let v: unknown;
  try {
    v = sjson.parse(text, undefined, { protoAction: 'error', constructorAction: 'error' });
  } catch (e) {
    const m = (e as Error).message;
    if (/forbidden prototype property/.test(m)) throw new ApiError('invalid_json', 'the JSON body has a "__proto__" or "constructor.prototype" key (prototype poisoning): refused');
    throw new ApiError('invalid_json', `malformed JSON body: ${m}`);
  }
  return v;
}

const SCHEMA_MAPS = ['properties', 'patternProperties', '$defs', 'definitions', 'dependentSchemas'] as const;
const SCHEMA_LISTS = ['anyOf', 'oneOf', 'allOf', 'prefixItems'] as const;
const SCHEMA_ONE = ['additionalProperties', 'items', 'not', 'if', 'then', 'else', 'contains', 'propertyNames', 'unevaluatedProperties', 'unevaluatedItems', 'additionalItems'] as const;

/**
 * A tool's parameter schema: objects (or booleans) wherever JSON Schema puts a subschema, arrays
 * where it puts lists of them, `type` a string or an array of strings. Bounded depth is already
 * guaranteed by the body parser; this walk is iterative anyway.
 */
export function checkToolSchema(schema: unknown, where: string): void {
  const stack: [unknown, string][] = [[schema, where]];
  while (stack.length) {
    const [s, at] = stack.pop()!;
    if (typeof s === 'boolean') continue;
    if (!isObj(s)) throw new ApiError('invalid_request', `${at} must be a JSON Schema object (got ${s === null ? 'null' : Array.isArray(s) ? 'an array' : typeof s})`, 'tools');
    if (s.type !== undefined && typeof s.type !== 'string' && !(Array.isArray(s.type) && s.type.every((t) => typeof t === 'string'))) {
      throw new ApiError('invalid_request', `${at}.type must be a string or an array of strings`, 'tools');
    }
    if (s.required !== undefined && !(Array.isArray(s.required) && s.required.every((t) => typeof t === 'string'))) {
      throw new ApiError('invalid_request', `${at}.required must be an array of strings`, 'tools');
    }
    if (s.enum !== undefined && !Array.isArray(s.enum)) throw new ApiError('invalid_request', `${at}.enum must be an array`, 'tools');
    for (const k of SCHEMA_MAPS) {
      if (s[k] === undefined) continue;
      if (!isObj(s[k])) throw new ApiError('invalid_request', `${at}.${k} must be an object of schemas`, 'tools');
      for (const [name, sub] of Object.entries(s[k] as Record<string, unknown>)) stack.push([sub, `${at}.${k}.${name}`]);
    }
    for (const k of SCHEMA_LISTS) {
      if (s[k] === undefined) continue;
      if (!Array.isArray(s[k])) throw new ApiError('invalid_request', `${at}.${k} must be an array of schemas`, 'tools');
      (s[k] as unknown[]).forEach((sub, i) => stack.push([sub, `${at}.${k}[${i}]`]));
    }
    for (const k of SCHEMA_ONE) {
      if (s[k] === undefined) continue;
      // draft-4 tuple form: items as a list of schemas
      if (k === 'items' && Array.isArray(s[k])) (s[k] as unknown[]).forEach((sub, i) => stack.push([sub, `${at}.items[${i}]`]));
      else stack.push([s[k], `${at}.${k}`]);
    }
  }
}
