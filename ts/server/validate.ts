/**
 * Input checks that must run before any handler touches a body: JSON parsed with a nesting bound
 * (deep nesting would overflow the stack of every recursive walk after it), and tool JSON Schemas
 * checked structurally (the output parser and the template walk them; a null or a number where a
 * schema belongs is the client's mistake and gets a 400 naming the place, not a 500).
 */
import { ApiError, isObj } from './errors.js';

/** Deepest array/object nesting a request body may have (agents' tool schemas stay far below). */
export const MAX_JSON_DEPTH = 128;

/** Nesting depth of JSON text, counted without parsing (strings and escapes skipped). */
export function jsonDepth(text: string, limit = Infinity): number {
  let depth = 0, max = 0, inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++; // backslash: skip the escaped character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) { if (++depth > max) { max = depth; if (max > limit) return max; } }
    else if (c === 0x5d || c === 0x7d) depth--;
  }
  return max;
}

/** JSON.parse behind the depth bound; keys that would poison prototypes are dropped. */
export function parseJsonBody(text: string, maxDepth = MAX_JSON_DEPTH): unknown {
  if (text.trim() === '') throw new ApiError('invalid_json', 'the request body is empty: send a JSON object');
  if (jsonDepth(text, maxDepth) > maxDepth) throw new ApiError('invalid_json', `the JSON body is nested deeper than ${maxDepth} levels`);
  try {
    if (!text.includes('"__proto__"') && !text.includes('"constructor"')) return JSON.parse(text);
    return JSON.parse(text, (k, v) => (k === '__proto__' || (k === 'constructor' && isObj(v) && 'prototype' in v) ? undefined : v));
  } catch (e) {
    throw new ApiError('invalid_json', `malformed JSON body: ${(e as Error).message}`);
  }
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
