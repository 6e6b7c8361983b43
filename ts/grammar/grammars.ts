/**
 * The grammars requests ask for, compiled once per distinct schema (a client sends the same
 * schema or tool list with every turn; reusing the compiled nodes reuses their cached masks):
 * a JSON document (response_format / text.format), or tool calls in Qwen's native form whose
 * names come from the declared tools and whose arguments follow each tool's parameter schema.
 */
import { schemaIndex, type ToolSpec } from '../chat/tool-call.js';
import type { Grammar } from './constraint.js';
import { latin1, type CallTool } from './matcher.js';
import { anyObject, compileSchema, SchemaError, type Node } from './schema.js';

const compiled = new Map<string, Node>();
const te = new TextEncoder();

function cachedSchema(schema: unknown): Node {
  const key = JSON.stringify(schema) ?? 'undefined';
  let n = compiled.get(key);
  if (!n) {
    n = compileSchema(schema);
    compiled.set(key, n);
    if (compiled.size > 64) compiled.delete(compiled.keys().next().value!);
  } else { compiled.delete(key); compiled.set(key, n); }
  return n;
}

/** A JSON document: of `schema`, or (json_object mode, no schema) any object. */
export function jsonGrammar(schema?: unknown): Grammar {
  return { kind: 'json', root: schema === undefined ? anyObject() : cachedSchema(schema) };
}

/**
 * Tool calls of the declared tools (only `name` when given). A parameter whose schema is all
 * string types is written as raw text, the rest as JSON: the same rule the output parser types
 * values by, so the arguments the client receives are the ones the grammar checked.
 */
export function toolCallGrammar(tools: ToolSpec[], name?: string): Grammar {
  const types = schemaIndex(tools);
  const out: CallTool[] = [];
  for (const t of tools) {
    const fn = t.function ?? t;
    if (!fn?.name || (name !== undefined && fn.name !== name)) continue;
    if (/[\s<>]/.test(fn.name)) throw new SchemaError(`tool ${JSON.stringify(fn.name)}: a name with whitespace, "<" or ">" cannot be called in the model's tool-call form`);
    let node = fn.parameters === undefined ? compileSchema({ type: 'object', properties: {} }) : cachedSchema(fn.parameters);
    if (node.k === 'alt') node = node.alts.find((a) => a.k === 'obj') ?? node;
    if (node.k !== 'obj') throw new SchemaError(`tool ${JSON.stringify(fn.name)}: parameters must be an object schema`);
    const bad = node.names.find((p) => !p || /[\s<>]/.test(p));
    if (bad !== undefined) throw new SchemaError(`tool ${JSON.stringify(fn.name)}: parameter name ${JSON.stringify(bad)} cannot be written in the model's tool-call form (whitespace, "<" or ">")`);
    const idx = types.get(fn.name);
    out.push({
      name: fn.name,
      params: node,
      keys: node.names.map((p) => latin1(te.encode(p))),
      raw: node.names.map((p) => { const ty = idx?.get(p); return !!ty && ty.length > 0 && ty.every((x) => x === 'string'); }),
    });
  }
  if (!out.length) throw new SchemaError(name !== undefined ? `no tool named ${JSON.stringify(name)}` : 'no tools to call');
  return { kind: 'call', tools: out };
}

export { SchemaError };
