/**
 * Client message formats → the chat template's messages. OpenAI and Anthropic histories are
 * validated here (clear 400 errors) and tool calls with a remembered id are replaced by the exact
 * sampled turn, so the rendered prompt matches the live KV state byte for byte.
 */
import type { ChatMessage, ContentPart } from '../chat/types.js';
import { ApiError, isObj } from './errors.js';
import type { ToolMemory } from './tool-memory.js';
import { MAX_JSON_DEPTH, checkToolSchema, jsonDepth } from './validate.js';

type Obj = Record<string, unknown>;

/** Why image parts are refused (every API's error names the part). */
export const NO_VISION = 'this model reads text only (no vision encoder): send the image as text (a description, OCR) or leave it out';

function text(content: unknown, where: string): string | ContentPart[] | null {
  if (content === null || content === undefined) return null;
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return content.map((p, i) => {
      if (!isObj(p)) throw new ApiError('invalid_request', `${where}.content[${i}] must be an object`);
      if (p.type === 'text' || p.type === 'input_text' || p.type === 'output_text') {
        if (typeof p.text !== 'string') throw new ApiError('invalid_request', `${where}.content[${i}].text must be a string`);
        return { type: 'text', text: p.text };
      }
      if (p.type === 'image_url' || p.type === 'image') throw new ApiError('invalid_request', `${where}.content[${i}] is an image: ${NO_VISION}`);
      throw new ApiError('invalid_request', `${where}.content[${i}] has unsupported type ${JSON.stringify(p.type)}`);
    });
  }
  throw new ApiError('invalid_request', `${where}.content must be a string or an array of parts`);
}

/** Merges system/developer messages into one leading system message (the template allows only that). */
function withSystem(system: string[], rest: ChatMessage[]): ChatMessage[] {
  return system.length ? [{ role: 'system', content: system.join('\n\n') }, ...rest] : rest;
}

/**
 * The exact sampled turn when every call id is remembered; otherwise the canonical fallback:
 * arguments re-ordered by the tool schema's property order (clients re-serialise JSON freely).
 */
function replay(m: ChatMessage, ids: (string | undefined)[], mem: ToolMemory, tools?: Obj[]): ChatMessage {
  const turn = ids.length ? mem.recall(ids[0]) : undefined;
  if (turn && ids.every((id) => mem.recall(id) === turn)) return { role: 'assistant', content: turn.content, reasoning_content: turn.reasoning };
  if (!m.tool_calls || !tools?.length) return m;
  const order = new Map<string, string[]>();
  for (const t of tools) {
    const fn = (isObj(t.function) ? t.function : t) as Obj;
    const props = isObj(fn.parameters) && isObj((fn.parameters as Obj).properties) ? Object.keys((fn.parameters as Obj).properties as Obj) : [];
    if (typeof fn.name === 'string') order.set(fn.name, props);
  }
  const calls = m.tool_calls.map((c) => {
    const fn = ('function' in c && c.function ? c.function : c) as { name: string; arguments?: Obj | string };
    let args: unknown = fn.arguments;
    if (typeof args === 'string') {
      // a string nested past the bound is left as sent: the renderer refuses it by name
      if (jsonDepth(args, MAX_JSON_DEPTH) > MAX_JSON_DEPTH) return c;
      try { args = JSON.parse(args || '{}'); } catch { return c; }
    }
    const keys = order.get(fn.name);
    if (!isObj(args) || !keys) return c;
    const sorted: Obj = {};
    // own keys only: a parameter named toString or constructor is the client's, not Object.prototype's
    for (const k of keys) if (Object.hasOwn(args, k)) sorted[k] = args[k];
    for (const k of Object.keys(args)) if (!Object.hasOwn(sorted, k)) sorted[k] = args[k];
    return { ...c, function: { name: fn.name, arguments: sorted } };
  });
  return { ...m, tool_calls: calls };
}

export function fromOpenAI(messages: unknown, mem: ToolMemory, tools?: Obj[]): ChatMessage[] {
  if (!Array.isArray(messages) || messages.length === 0) throw new ApiError('invalid_request', 'messages must be a non-empty array', 'messages');
  const system: string[] = [];
  const out: ChatMessage[] = [];
  messages.forEach((m, i) => {
    const where = `messages[${i}]`;
    if (!isObj(m)) throw new ApiError('invalid_request', `${where} must be an object`, 'messages');
    switch (m.role) {
      case 'system': case 'developer': {
        const c = text(m.content, where);
        system.push(typeof c === 'string' ? c : (c ?? []).map((p) => p.text ?? '').join(''));
        break;
      }
      case 'user': out.push({ role: 'user', content: text(m.content, where) }); break;
      case 'assistant': {
        const calls = m.tool_calls;
        if (calls !== undefined && calls !== null && !Array.isArray(calls)) throw new ApiError('invalid_request', `${where}.tool_calls must be an array`);
        const tc = (calls as unknown[] | undefined ?? []).map((c, k) => {
          if (!isObj(c) || !isObj(c.function) || typeof c.function.name !== 'string') throw new ApiError('invalid_request', `${where}.tool_calls[${k}] needs function.name`);
          return { id: typeof c.id === 'string' ? c.id : undefined, function: { name: c.function.name, arguments: (c.function.arguments ?? '{}') as string | Obj } };
        });
        const msg: ChatMessage = { role: 'assistant', content: text(m.content, where), tool_calls: tc.length ? tc : undefined };
        if (typeof m.reasoning_content === 'string') msg.reasoning_content = m.reasoning_content;
        out.push(replay(msg, tc.map((c) => c.id), mem, tools));
        break;
      }
      case 'tool': out.push({ role: 'tool', content: text(m.content, where) }); break;
      default: throw new ApiError('unknown_role', `${where}.role ${JSON.stringify(m.role)} is not one of system, developer, user, assistant, tool`, 'messages');
    }
  });
  return withSystem(system, out);
}

export function toolsFromOpenAI(tools: unknown): Obj[] | undefined {
  if (tools === undefined || tools === null) return undefined;
  if (!Array.isArray(tools)) throw new ApiError('invalid_request', 'tools must be an array', 'tools');
  return tools.map((t, i) => {
    if (!isObj(t) || !isObj(t.function) || typeof t.function.name !== 'string') throw new ApiError('invalid_request', `tools[${i}] must be {type: "function", function: {name, parameters}}`, 'tools');
    if (t.function.parameters !== undefined && t.function.parameters !== null) checkToolSchema(t.function.parameters, `tools[${i}].function.parameters`);
    return t;
  });
}

export function fromAnthropic(system: unknown, messages: unknown, mem: ToolMemory, tools?: Obj[]): ChatMessage[] {
  if (!Array.isArray(messages) || messages.length === 0) throw new ApiError('invalid_request', 'messages must be a non-empty array');
  const sys: string[] = [];
  if (typeof system === 'string') sys.push(system);
  else if (Array.isArray(system)) {
    system.forEach((b, k) => { if (!isObj(b)) throw new ApiError('invalid_request', `system[${k}] must be a text block object`); });
    // Claude Code's per-request attribution block (its cch= value changes every request) would
    // change the prompt's first bytes each time and defeat all prefix reuse: it is not for the model
    const kept = system.filter((b) => !(typeof b.text === 'string' && BILLING_HEADER.test(b.text)));
    sys.push(kept.map((b) => (typeof b.text === 'string' ? b.text : '')).join('\n'));
  }
  else if (system !== undefined) throw new ApiError('invalid_request', 'system must be a string or an array of text blocks');
  const out: ChatMessage[] = [];
  messages.forEach((m, i) => {
    const where = `messages[${i}]`;
    if (!isObj(m)) throw new ApiError('invalid_request', `${where} must be an object`);
    const blocks: Obj[] = typeof m.content === 'string' ? [{ type: 'text', text: m.content }] : Array.isArray(m.content) ? (m.content as Obj[]) : [];
    if (!Array.isArray(m.content) && typeof m.content !== 'string') throw new ApiError('invalid_request', `${where}.content must be a string or an array of blocks`);
    blocks.forEach((b, k) => { if (!isObj(b)) throw new ApiError('invalid_request', `${where}.content[${k}] must be an object`); });
    if (m.role === 'system') {
      // a mid-conversation system message (Claude Code sends them): the template allows one
      // system message, first, so it joins the system prompt, as the chat endpoint does
      sys.push(blocks.map((b) => (typeof b.text === 'string' ? b.text : '')).join('\n'));
    } else if (m.role === 'user') {
      const texts: ContentPart[] = [];
      for (const b of blocks) {
        if (!isObj(b)) throw new ApiError('invalid_request', `${where}: content blocks must be objects`);
        if (b.type === 'tool_result') {
          if (b.content !== undefined && b.content !== null && typeof b.content !== 'string' && !Array.isArray(b.content)) throw new ApiError('invalid_request', `${where}: tool_result content must be a string or an array of blocks`);
          const parts = Array.isArray(b.content) ? (b.content as unknown[]) : [];
          parts.forEach((x, k) => { if (!isObj(x)) throw new ApiError('invalid_request', `${where}: tool_result content[${k}] must be an object`); });
          // a tool's image (a screenshot, an image file read) is named in the text the model sees,
          // not dropped: refusing would end an agent's turn over one tool result
          const c = typeof b.content === 'string' ? b.content : (parts as Obj[]).map((x) => (x.type === 'image' ? '[an image was returned here: this model reads text only]' : typeof x.text === 'string' ? x.text : '')).join('');
          out.push({ role: 'tool', content: c });
        } else if (b.type === 'text') texts.push({ type: 'text', text: String(b.text ?? '') });
        else if (b.type === 'image') throw new ApiError('invalid_request', `${where}: an image block: ${NO_VISION}`);
        else if (b.type === 'document') texts.push({ type: 'text', text: documentText(b, `${where}: document`) });
        else throw new ApiError('invalid_request', `${where}: unsupported block type ${JSON.stringify(b.type)}`);
      }
      if (texts.length) out.push({ role: 'user', content: texts });
    } else if (m.role === 'assistant') {
      let reasoning: string | undefined;
      let content = '';
      const calls: { id?: string; function: { name: string; arguments: Obj } }[] = [];
      for (const b of blocks) {
        if (b.type === 'thinking') reasoning = (reasoning ?? '') + String(b.thinking ?? '');
        else if (b.type === 'redacted_thinking') continue;
        else if (b.type === 'text') content += String(b.text ?? '');
        else if (b.type === 'tool_use') {
          if (typeof b.name !== 'string') throw new ApiError('invalid_request', `${where}: tool_use needs a name`);
          calls.push({ id: typeof b.id === 'string' ? b.id : undefined, function: { name: b.name, arguments: isObj(b.input) ? b.input : {} } });
        } else throw new ApiError('invalid_request', `${where}: unsupported block type ${JSON.stringify(b.type)}`);
      }
      const msg: ChatMessage = { role: 'assistant', content, tool_calls: calls.length ? calls : undefined };
      if (reasoning !== undefined) msg.reasoning_content = reasoning;
      out.push(replay(msg, calls.map((c) => c.id), mem, tools));
    } else throw new ApiError('unknown_role', `${where}.role ${JSON.stringify(m.role)} must be user, assistant or system`);
  });
  return withSystem(sys, out);
}

/** `x-anthropic-billing-header: cc_version=…; cch=…;` (a system block Claude Code adds per request) */
const BILLING_HEADER = /^\s*x-anthropic-billing-header:/i;

/**
 * An Anthropic document block as text: plain-text sources (and text content blocks) as they are,
 * under their title; other media (PDF, URLs) cannot be read by this model and become a clear
 * placeholder naming them, so the conversation stays intact and the model knows something was there.
 */
function documentText(b: Obj, where: string): string {
  const src = b.source;
  if (!isObj(src)) throw new ApiError('invalid_request', `${where} needs a source object`);
  const title = typeof b.title === 'string' && b.title ? `${b.title}\n\n` : '';
  if (src.type === 'text') {
    if (typeof src.data !== 'string') throw new ApiError('invalid_request', `${where}: a text source needs a "data" string`);
    return title + src.data;
  }
  if (src.type === 'content' && Array.isArray(src.content)) {
    return title + (src.content as unknown[]).map((c) => (isObj(c) && c.type === 'text' && typeof c.text === 'string' ? c.text : '[non-text content omitted]')).join('\n');
  }
  const kind = typeof src.media_type === 'string' ? src.media_type : typeof src.url === 'string' ? src.url : String(src.type);
  return `${title}[document (${kind}) omitted: this server reads plain-text documents only]`;
}

export function toolsFromAnthropic(tools: unknown): Obj[] | undefined {
  if (tools === undefined || tools === null) return undefined;
  if (!Array.isArray(tools)) throw new ApiError('invalid_request', 'tools must be an array');
  return tools.map((t, i) => {
    if (!isObj(t) || typeof t.name !== 'string') throw new ApiError('invalid_request', `tools[${i}] needs a name`);
    if (t.input_schema !== undefined && t.input_schema !== null) checkToolSchema(t.input_schema, `tools[${i}].input_schema`);
    return { type: 'function', function: { name: t.name, description: t.description ?? '', parameters: t.input_schema ?? { type: 'object', properties: {} }, ...(t.strict === true ? { strict: true } : {}) } };
  });
}
