/**
 * Structured output: what a request asks the answer to follow, as a grammar for the answer
 * decoder — chat `response_format` and Responses `text.format` (json_object, json_schema), every
 * forced tool call (tool_choice required/any/named: a declared tool's name, arguments of its
 * parameter schema), and the calls the model makes itself when every tool is `strict`. A schema
 * keyword the decoder cannot enforce is a 400 naming it.
 */
import type { Grammar } from '../grammar/constraint.js';
import { jsonGrammar, SchemaError, toolCallGrammar } from '../grammar/grammars.js';
import type { ToolSpec } from '../chat/tool-call.js';
import { ApiError } from './errors.js';

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => !!v && typeof v === 'object' && !Array.isArray(v);

/** The requested output format: none (text), any JSON object, or a schema's document. */
export type OutputFormat = undefined | { schema?: unknown };

/** chat `response_format` (nested json_schema) or Responses `text.format` (flat). */
export function outputFormat(v: unknown, param: 'response_format' | 'text.format'): OutputFormat {
  if (v === undefined || v === null) return undefined;
  if (!isObj(v)) throw new ApiError('invalid_request', `${param} must be an object`, param);
  if (v.type === 'text') return undefined;
  if (v.type === 'json_object') return {};
  if (v.type === 'json_schema') {
    const holder = param === 'response_format' ? v.json_schema : v;
    if (!isObj(holder)) throw new ApiError('invalid_request', `${param}.json_schema must be an object with the schema`, param);
    if (holder.schema === undefined) return {};
    if (!isObj(holder.schema) && typeof holder.schema !== 'boolean') throw new ApiError('invalid_request', `${param}: the schema must be a JSON Schema object`, param);
    return { schema: holder.schema };
  }
  throw new ApiError('invalid_request', `${param}: type ${JSON.stringify(v.type)} is not one of "text", "json_object", "json_schema"`, param);
}

/**
 * The grammar of a turn's answer. A forced call follows the tools' schemas; a format, the
 * schema (or any object), with the request's tools still callable instead when tool_choice
 * leaves the choice to the model.
 */
export function answerGrammar(o: { format: OutputFormat; formatParam: string; tools?: Obj[]; force?: { name?: string } }): Grammar | undefined {
  const tools = (o.tools ?? []) as ToolSpec[];
  const named = (e: unknown, param: string): never => {
    if (e instanceof SchemaError) throw new ApiError('invalid_request', `${param}: ${e.message}`, param);
    throw e;
  };
  if (o.force && tools.length) {
    try { return toolCallGrammar(tools, o.force.name); } catch (e) { return named(e, 'tools'); }
  }
  // strict functions (every tool): the calls the model chooses to make follow their schemas
  if (!o.format && tools.length && tools.every((t) => (t.function?.strict ?? t.strict) === true)) {
    try { return { ...toolCallGrammar(tools), lazy: true } as Grammar; } catch (e) { return named(e, 'tools'); }
  }
  if (!o.format) return undefined;
  let g: Grammar;
  try { g = jsonGrammar(o.format.schema); } catch (e) { return named(e, o.formatParam); }
  if (tools.length) {
    try { const calls = toolCallGrammar(tools); if (calls.kind === 'call') g = { ...g, kind: 'json', tools: calls.tools } as Grammar; } catch (e) { return named(e, 'tools'); }
  }
  return g;
}
