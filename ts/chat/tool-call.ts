/**
 * Tool calls in Qwen's native XML-ish form:
 *   <tool_call>\n<function=NAME>\n<parameter=KEY>\nVALUE\n</parameter>\n…</function>\n</tool_call>
 * Values are raw text; their JSON type comes from the tool's schema (string → as is, else JSON).
 */
import { pyJson } from './py-compat.js';
import { MAX_JSON_DEPTH, jsonDepth } from '../json-depth.js';

export interface ParsedToolCall {
  name: string;
  arguments: Record<string, unknown>;
  /** the exact text the model produced, from <tool_call> to </tool_call> (for exact replay) */
  raw: string;
  /** the stream ended before the call was closed */
  incomplete?: boolean;
}

/** A tool definition as clients send it (OpenAI `{type:'function', function:{name, parameters}}` or bare). */
export type ToolSpec = { type?: string; function?: { name: string; parameters?: unknown; strict?: boolean }; name?: string; parameters?: unknown; strict?: boolean };

type Schema = { type?: string | string[]; properties?: Record<string, Schema>; anyOf?: Schema[]; oneOf?: Schema[] };

/** name → parameter name → declared JSON type(s) */
export function schemaIndex(tools: ToolSpec[] | undefined): Map<string, Map<string, string[]>> {
  const idx = new Map<string, Map<string, string[]>>();
  for (const t of tools ?? []) {
    const fn = t.function ?? t;
    if (!fn?.name) continue;
    const props = ((fn.parameters ?? {}) as Schema).properties ?? {};
    const m = new Map<string, string[]>();
    for (const [k, s] of Object.entries(props)) {
      const types = new Set<string>();
      for (const alt of [s, ...(s.anyOf ?? []), ...(s.oneOf ?? [])]) {
        if (typeof alt.type === 'string') types.add(alt.type);
        else if (Array.isArray(alt.type)) alt.type.forEach((x) => types.add(x));
      }
      m.set(k, [...types]);
    }
    idx.set(fn.name, m);
  }
  return idx;
}

/**
 * Types a raw parameter value: a string-typed parameter keeps its text; anything else is parsed
 * as JSON, falling back to the text when it does not parse. Without a schema, JSON is tried too.
 */
export function typeValue(raw: string, types: string[] | undefined): unknown {
  if (types && types.length > 0 && types.every((t) => t === 'string')) return raw;
  // text nested past the bound stays text (re-rendering it as JSON would recurse that deep)
  if (jsonDepth(raw, MAX_JSON_DEPTH) > MAX_JSON_DEPTH) return raw;
  try {
    const v = JSON.parse(raw);
    if (types && types.includes('string') && typeof v !== 'string' && !types.includes(typeof v === 'object' ? (Array.isArray(v) ? 'array' : v === null ? 'null' : 'object') : typeof v === 'number' ? (Number.isInteger(v) ? 'integer' : 'number') : typeof v)) {
      return raw;
    }
    return v;
  } catch {
    return raw;
  }
}

/** Canonical native text of a call (the chat template's formatting): the fallback for replay. */
export function renderToolCall(name: string, args: Record<string, unknown>): string {
  let s = `<tool_call>\n<function=${name}>\n`;
  for (const [k, v] of Object.entries(args)) s += `<parameter=${k}>\n${typeof v === 'string' ? v : pyJson(v)}\n</parameter>\n`;
  return s + '</function>\n</tool_call>';
}
