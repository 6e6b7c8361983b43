/**
 * POST /v1/responses (OpenAI Responses API): input items → a conversation, tools as the server
 * can run them, output items and the streaming event lifecycle. The turn itself is turn.ts.
 *
 * Tools: `function` tools as they are; `namespace` tools flattened into their functions (the call
 * comes back with its `namespace`); `custom` (free-form) tools as a function of one string
 * `input` (the call comes back as a `custom_tool_call`); hosted tools this server cannot run
 * (`web_search`, `file_search`, …) are left out of the prompt.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ChatMessage } from '../chat/types.js';
import { answerGrammar, outputFormat } from './structured.js';
import { ApiError, isObj, jsonBody } from './errors.js';
import { NO_VISION, fromOpenAI, toolsFromOpenAI } from './convert.js';
import { maxTokens, sampling, stops, thinkingBudget, thinkingOn, toolChoice, unsupported } from './sampling.js';
import { responsesBody } from './schemas.js';
import { recallToolIds, type ServerContext } from './context.js';
import { serveTurn, type ApiWriter, type TurnOutcome, type TurnSpec } from './turn.js';

type Obj = Record<string, unknown>;

/** What a flattened tool was on the wire, to shape its calls back. */
interface ToolOrigin { kind: 'function' | 'custom'; namespace?: string }

/** Responses tools → chat function tools, with each name's origin; hosted tools are left out. */
export function toolsFromResponses(tools: unknown): { tools?: Obj[]; origin: Map<string, ToolOrigin> } {
  const origin = new Map<string, ToolOrigin>();
  if (tools === undefined || tools === null) return { origin };
  if (!Array.isArray(tools)) throw new ApiError('invalid_request', 'tools must be an array', 'tools');
  const out: Obj[] = [];
  const fn = (t: Obj, where: string, namespace?: Obj): void => {
    if (typeof t.name !== 'string' || !t.name) throw new ApiError('invalid_request', `${where} needs a name`, 'tools');
    const desc = [namespace && typeof namespace.description === 'string' ? namespace.description : '', typeof t.description === 'string' ? t.description : ''].filter(Boolean).join('\n\n');
    if (t.type === 'custom') {
      out.push({ type: 'function', function: { name: t.name, description: `${desc}${desc ? '\n\n' : ''}Free-form tool: put the whole input in the "input" parameter.`, parameters: { type: 'object', properties: { input: { type: 'string' } }, required: ['input'] } } });
      origin.set(t.name, { kind: 'custom', namespace: namespace?.name as string | undefined });
    } else {
      out.push({ type: 'function', function: { name: t.name, description: desc, parameters: t.parameters ?? { type: 'object', properties: {} }, ...(t.strict === true ? { strict: true } : {}) } });
      origin.set(t.name, { kind: 'function', namespace: namespace?.name as string | undefined });
    }
  };
  tools.forEach((t, i) => {
    const where = `tools[${i}]`;
    if (!isObj(t)) throw new ApiError('invalid_request', `${where} must be an object`, 'tools');
    if (t.type === 'function' && isObj(t.function)) out.push(t); // the chat form, accepted too
    else if (t.type === 'function' || t.type === 'custom') fn(t, where);
    else if (t.type === 'namespace') {
      if (!Array.isArray(t.tools)) throw new ApiError('invalid_request', `${where}: a namespace needs a "tools" array`, 'tools');
      (t.tools as unknown[]).forEach((inner, k) => {
        if (!isObj(inner)) throw new ApiError('invalid_request', `${where}.tools[${k}] must be an object`, 'tools');
        // (anything else inside a namespace is a hosted tool too)
        if (inner.type === 'function' || inner.type === 'custom') fn(inner, `${where}.tools[${k}]`, t);
      });
    } // else a hosted tool (web_search, file_search, computer_use, …): this server cannot run it
  });
  return { tools: out.length ? toolsFromOpenAI(out) : undefined, origin };
}

/** A message's content parts → chat parts (images refused, files as a placeholder). */
function parts(content: unknown, where: string): unknown {
  if (!Array.isArray(content)) return content;
  return content.map((p, k) => {
    if (!isObj(p)) throw new ApiError('invalid_request', `${where}.content[${k}] must be an object`, 'input');
    if (p.type === 'input_image') throw new ApiError('invalid_request', `${where}.content[${k}] is an image: ${NO_VISION}`, 'input');
    if (p.type === 'input_file') return { type: 'text', text: `[file ${typeof p.filename === 'string' ? p.filename : ''} omitted: this server reads text only]` };
    if (p.type === 'refusal') return { type: 'text', text: String(p.refusal ?? '') };
    return p;
  });
}

/** Responses input items → OpenAI chat messages (then the shared conversion). */
function inputToMessages(input: unknown, instructions: unknown): Obj[] {
  const out: Obj[] = [];
  if (typeof instructions === 'string' && instructions) out.push({ role: 'system', content: instructions });
  if (typeof input === 'string') { out.push({ role: 'user', content: input }); return out; }
  if (!Array.isArray(input) || input.length === 0) throw new ApiError('invalid_request', 'input must be a string or a non-empty array of items', 'input');
  const call = (c: Obj) => {
    const prev = out[out.length - 1];
    if (prev && prev.role === 'assistant' && Array.isArray(prev.tool_calls)) (prev.tool_calls as Obj[]).push(c);
    else out.push({ role: 'assistant', content: null, tool_calls: [c] });
  };
  input.forEach((it, i) => {
    if (!isObj(it)) throw new ApiError('invalid_request', `input[${i}] must be an object`, 'input');
    if (it.type === 'function_call') call({ id: it.call_id, type: 'function', function: { name: it.name, arguments: it.arguments ?? '{}' } });
    else if (it.type === 'custom_tool_call') call({ id: it.call_id, type: 'function', function: { name: it.name, arguments: { input: String(it.input ?? '') } } });
    else if (it.type === 'function_call_output' || it.type === 'custom_tool_call_output') {
      out.push({ role: 'tool', tool_call_id: it.call_id, content: typeof it.output === 'string' ? it.output : JSON.stringify(it.output) });
    } else if (it.type === 'reasoning') {
      // reasoning items are re-derived from the exact replay memory
    } else if (it.type === 'message' || (it.type === undefined && it.role !== undefined)) {
      out.push({ role: it.role, content: parts(it.content, `input[${i}]`) });
    } else throw new ApiError('invalid_request', `input[${i}] has unsupported type ${JSON.stringify(it.type)}`, 'input');
  });
  return out;
}

/** Recent responses (bounded), so a request can continue one by previous_response_id. */
export class ResponseStore {
  private map = new Map<string, Obj[]>();
  constructor(readonly max = 256) {}
  put(id: string, conversation: Obj[]): void {
    this.map.set(id, conversation);
    while (this.map.size > this.max) this.map.delete(this.map.keys().next().value as string);
  }
  get(id: string): Obj[] | undefined {
    return this.map.get(id);
  }
}

/** Where a Responses stream's events go: the SSE stream, or a WebSocket (responses-ws.ts). */
export interface EventSink { event(type: string, data: Obj): void }

/** A Responses create body made into a turn: its conversation, spec and response shapes. */
export interface ResponsesTurn {
  id: string;
  /** the whole conversation in chat form (history + new input), as stored for continuations */
  msgs: Obj[];
  /** the new input items only, as chat messages (a live continuation appends just these) */
  added: ChatMessage[];
  messages: ChatMessage[];
  spec: TurnSpec;
  /** the finished response object (stored for continuations by id) */
  final(r: TurnOutcome): Obj;
  /** the stream's event shapes */
  writer(sink: EventSink): ApiWriter;
  /** the response object of a turn that failed after it opened */
  failed(e: ApiError): Obj;
}

/**
 * A Responses create body → the turn and its output shapes (previous_response_id's stored
 * conversation first, then the new input items). Both transports, SSE and WebSocket, use it.
 */
export function responsesTurn(ctx: ServerContext, b: Obj, store: ResponseStore): ResponsesTurn {
  unsupported(b, 'responses');
  const { tools: all, origin } = toolsFromResponses(b.tools);
  const { tools, force } = toolChoice(b.tool_choice, 'responses', all);
  const think = thinkingOn(b) && (b.reasoning as Obj | undefined)?.effort !== 'none';
  const grammar = answerGrammar({ format: outputFormat((b.text as Obj | undefined)?.format, 'text.format'), formatParam: 'text.format', tools, force });
  let history: Obj[] = [];
  if (b.previous_response_id !== undefined && b.previous_response_id !== null) {
    const prev = typeof b.previous_response_id === 'string' ? store.get(b.previous_response_id) : undefined;
    if (!prev) throw new ApiError('previous_response_not_found', `previous response ${JSON.stringify(b.previous_response_id)} not found (this server keeps the last ${store.max})`, 'previous_response_id');
    history = prev;
  }
  const newMsgs = inputToMessages(b.input, history.length ? undefined : b.instructions);
  const msgs = [...history, ...newMsgs];
  recallToolIds(ctx, msgs.flatMap((m) => (Array.isArray(m.tool_calls) ? (m.tool_calls as Obj[]).map((c) => String(c.id)) : [])));
  const messages = fromOpenAI(msgs, ctx.tools, tools) as ChatMessage[];
  const added = history.length ? (fromOpenAI(newMsgs, ctx.tools, tools) as ChatMessage[]) : messages;
  const id = `resp_${ctx.tools.newId('')}`;
  const spec: TurnSpec = {
    provider: 'openai', messages, tools, think, param: 'input', toolIdPrefix: 'call_', thinkingBudget: thinkingBudget(b), forceToolCall: force, grammar,
    maxTokens: maxTokens(b, ['max_output_tokens'], ctx.defaultMaxTokens), sampling: sampling(b, ctx.sampling), stop: stops(b.stop, 'stop'),
  };
  const created = Math.floor(Date.now() / 1000);
  const incomplete = (r: TurnOutcome) => r.finish === 'length' || r.finish === 'timeout';
  const shell = (status: string, output: Obj[], usage: Obj | null, extra: Obj = {}) => ({
    id, object: 'response', created_at: created, status, model: ctx.modelName, output, usage, error: null, incomplete_details: null,
    instructions: b.instructions ?? null, tools: b.tools ?? [], parallel_tool_calls: true, previous_response_id: b.previous_response_id ?? null, ...extra,
  });
  const usageOf = (r: TurnOutcome) => ({ input_tokens: r.promptTokens, input_tokens_details: { cached_tokens: r.cachedTokens }, output_tokens: r.completionTokens, output_tokens_details: { reasoning_tokens: r.reasoningTokens }, total_tokens: r.promptTokens + r.completionTokens });
  const callItem = (name: string, args: Obj, cid: string, status: string) => {
    const o = origin.get(name);
    const ns = o?.namespace ? { namespace: o.namespace } : {};
    return o?.kind === 'custom'
      ? { type: 'custom_tool_call', id: `ctc_${cid}`, call_id: cid, name, input: typeof args.input === 'string' ? args.input : JSON.stringify(args), status, ...ns }
      : { type: 'function_call', id: `fc_${cid}`, call_id: cid, name, arguments: JSON.stringify(args), status, ...ns };
  };
  const message = (text: string, status: string) => ({ type: 'message', id: `msg_${id}`, role: 'assistant', status, content: [{ type: 'output_text', text, annotations: [] }] });
  const reasoningItem = (text: string) => ({ type: 'reasoning', id: `rs_${id}`, summary: [], content: [{ type: 'reasoning_text', text }] });
  const items = (r: TurnOutcome) => {
    const out: Obj[] = [];
    if (r.parsed.reasoning) out.push(reasoningItem(r.parsed.reasoning));
    if (r.parsed.content || !r.parsed.toolCalls.length) out.push(message(r.parsed.content, incomplete(r) ? 'incomplete' : 'completed'));
    r.parsed.toolCalls.forEach((c, i) => out.push(callItem(c.name, c.arguments, r.callIds[i], 'completed')));
    return out;
  };
  const failed = (e: ApiError) => shell('failed', [], null, { error: { code: e.code, message: e.message } });
  /** the finished response: stored for continuations, with its status */
  const final = (r: TurnOutcome) => {
    store.put(id, [...msgs, { role: 'assistant', content: r.parsed.content, tool_calls: r.parsed.toolCalls.length ? r.parsed.toolCalls.map((c, i) => ({ id: r.callIds[i], type: 'function', function: { name: c.name, arguments: c.arguments } })) : undefined }]);
    return incomplete(r)
      ? shell('incomplete', items(r), usageOf(r), { incomplete_details: { reason: 'max_output_tokens' } })
      : shell('completed', items(r), usageOf(r));
  };

  const writer = (sink: EventSink): ApiWriter => {
    let seq = 0;
    const ev = (type: string, data: Obj) => sink.event(type, { type, sequence_number: seq++, ...data });
    let outIndex = -1;
    let open: 'reasoning' | 'message' | null = null;
    let reasoning = '', text = '';
    const closeOpen = () => {
      if (open === 'reasoning') {
        ev('response.reasoning_text.done', { item_id: `rs_${id}`, output_index: outIndex, content_index: 0, text: reasoning });
        ev('response.content_part.done', { item_id: `rs_${id}`, output_index: outIndex, content_index: 0, part: { type: 'reasoning_text', text: reasoning } });
        ev('response.output_item.done', { output_index: outIndex, item: reasoningItem(reasoning) });
      } else if (open === 'message') {
        ev('response.output_text.done', { item_id: `msg_${id}`, output_index: outIndex, content_index: 0, text });
        ev('response.content_part.done', { item_id: `msg_${id}`, output_index: outIndex, content_index: 0, part: { type: 'output_text', text, annotations: [] } });
        ev('response.output_item.done', { output_index: outIndex, item: message(text, 'completed') });
      }
      open = null;
    };
    return {
      open: () => {
        ev('response.created', { response: shell('in_progress', [], null) });
        ev('response.in_progress', { response: shell('in_progress', [], null) });
      },
      // the Responses API has no ping: the response's in_progress state again, before any output
      keepAlive: () => { if (outIndex < 0) ev('response.in_progress', { response: shell('in_progress', [], null) }); },
      delta: (e, t) => {
        if (e.type === 'reasoning') {
          if (open !== 'reasoning') {
            closeOpen(); outIndex++; open = 'reasoning';
            ev('response.output_item.added', { output_index: outIndex, item: { type: 'reasoning', id: `rs_${id}`, summary: [], content: [] } });
            ev('response.content_part.added', { item_id: `rs_${id}`, output_index: outIndex, content_index: 0, part: { type: 'reasoning_text', text: '' } });
          }
          reasoning += e.text;
          ev('response.reasoning_text.delta', { item_id: `rs_${id}`, output_index: outIndex, content_index: 0, delta: e.text });
        } else if (e.type === 'content') {
          if (open !== 'message') {
            closeOpen(); outIndex++; open = 'message';
            ev('response.output_item.added', { output_index: outIndex, item: { type: 'message', id: `msg_${id}`, role: 'assistant', status: 'in_progress', content: [] } });
            ev('response.content_part.added', { item_id: `msg_${id}`, output_index: outIndex, content_index: 0, part: { type: 'output_text', text: '', annotations: [] } });
          }
          text += e.text;
          ev('response.output_text.delta', { item_id: `msg_${id}`, output_index: outIndex, content_index: 0, delta: e.text });
        } else if (e.type === 'tool_call_end') {
          closeOpen();
          outIndex++;
          const cid = t.callId(e.index);
          const done = callItem(e.call.name, e.call.arguments, cid, 'completed');
          const custom = done.type === 'custom_tool_call';
          ev('response.output_item.added', { output_index: outIndex, item: { ...done, status: 'in_progress', ...(custom ? { input: '' } : { arguments: '' }) } });
          if (custom) {
            ev('response.custom_tool_call_input.delta', { item_id: done.id, output_index: outIndex, delta: (done as { input: string }).input });
            ev('response.custom_tool_call_input.done', { item_id: done.id, output_index: outIndex, input: (done as { input: string }).input });
          } else {
            ev('response.function_call_arguments.delta', { item_id: done.id, output_index: outIndex, delta: (done as { arguments: string }).arguments });
            ev('response.function_call_arguments.done', { item_id: done.id, output_index: outIndex, arguments: (done as { arguments: string }).arguments });
          }
          ev('response.output_item.done', { output_index: outIndex, item: done });
        }
      },
      finish: (r) => {
        closeOpen();
        const resp = final(r);
        ev(resp.status === 'incomplete' ? 'response.incomplete' : 'response.completed', { response: resp });
      },
      error: (e: ApiError) => ev('response.failed', { response: failed(e) }),
    };
  };
  return { id, msgs, added, messages, spec, final, writer, failed };
}

export function registerResponses(app: FastifyInstance, ctx: ServerContext): ResponseStore {
  const store = new ResponseStore();
  app.post('/v1/responses', { schema: { body: responsesBody } }, async (req: FastifyRequest, reply: FastifyReply) => {
    const t = responsesTurn(ctx, jsonBody(req.body), store);
    return serveTurn(ctx, req, reply, t.spec, { stream: jsonBody(req.body).stream === true, body: t.final, writer: t.writer });
  });
  return store;
}
