/** POST /v1/responses (OpenAI Responses API): message, reasoning and function_call output items, with the streaming event lifecycle. */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { renderChat } from '../chat/render.js';
import { ChatTemplateError, type ChatMessage } from '../chat/types.js';
import { ApiError, isObj, jsonBody } from './errors.js';
import { fromOpenAI, toolsFromOpenAI } from './convert.js';
import { rememberTurn } from './openai-chat.js';
import { maxTokens, sampling, thinkingOn } from './sampling.js';
import { Sse } from './sse.js';
import { responsesBody } from './schemas.js';
import { recallToolIds, type ServerContext } from './context.js';

type Obj = Record<string, unknown>;

/** Responses input items → OpenAI chat messages (then the shared conversion). */
function inputToMessages(input: unknown, instructions: unknown): Obj[] {
  const out: Obj[] = [];
  if (typeof instructions === 'string' && instructions) out.push({ role: 'system', content: instructions });
  if (typeof input === 'string') { out.push({ role: 'user', content: input }); return out; }
  if (!Array.isArray(input) || input.length === 0) throw new ApiError('invalid_request', 'input must be a string or a non-empty array of items', 'input');
  input.forEach((it, i) => {
    if (!isObj(it)) throw new ApiError('invalid_request', `input[${i}] must be an object`, 'input');
    if (it.type === 'function_call') {
      const prev = out[out.length - 1];
      const call = { id: it.call_id, type: 'function', function: { name: it.name, arguments: it.arguments ?? '{}' } };
      if (prev && prev.role === 'assistant' && Array.isArray(prev.tool_calls)) (prev.tool_calls as Obj[]).push(call);
      else out.push({ role: 'assistant', content: null, tool_calls: [call] });
    } else if (it.type === 'function_call_output') {
      out.push({ role: 'tool', tool_call_id: it.call_id, content: typeof it.output === 'string' ? it.output : JSON.stringify(it.output) });
    } else if (it.type === 'reasoning') {
      // reasoning items are re-derived from the exact replay memory
    } else if (it.type === 'message' || it.role !== undefined) {
      out.push({ role: it.role, content: it.content });
    } else throw new ApiError('invalid_request', `input[${i}] has unsupported type ${JSON.stringify(it.type)}`, 'input');
  });
  return out;
}

function toolsFromResponses(tools: unknown): Obj[] | undefined {
  if (tools === undefined || tools === null) return undefined;
  if (!Array.isArray(tools)) throw new ApiError('invalid_request', 'tools must be an array', 'tools');
  return toolsFromOpenAI(tools.map((t) => (isObj(t) && t.type === 'function' && !isObj(t.function) ? { type: 'function', function: { name: t.name, description: t.description, parameters: t.parameters } } : t)));
}

export function registerResponses(app: FastifyInstance, ctx: ServerContext): void {
  app.post('/v1/responses', { schema: { body: responsesBody } }, async (req: FastifyRequest, reply: FastifyReply) => {
    const b = jsonBody(req.body);
    const tools = b.tool_choice === 'none' ? undefined : toolsFromResponses(b.tools);
    const think = thinkingOn(b) && (b.reasoning as Obj | undefined)?.effort !== 'none';
    const msgs = inputToMessages(b.input, b.instructions);
    recallToolIds(ctx, msgs.flatMap((m) => (Array.isArray(m.tool_calls) ? (m.tool_calls as Obj[]).map((c) => String(c.id)) : [])));
    let prompt: string;
    try {
      prompt = renderChat(fromOpenAI(msgs, ctx.tools, tools) as ChatMessage[], { tools, enableThinking: think ? undefined : false });
    } catch (e) {
      if (e instanceof ChatTemplateError) throw new ApiError('template_error', e.message, 'input');
      throw e;
    }
    const id = `resp_${ctx.tools.newId('')}`;
    const created = Math.floor(Date.now() / 1000);
    const ac = new AbortController();
    reply.raw.on('close', () => { if (!reply.raw.writableFinished) ac.abort(); });
    const common = { prompt, startInReasoning: think, tools, maxTokens: maxTokens(b, ['max_output_tokens'], ctx.defaultMaxTokens), sampling: sampling(b, ctx.sampling), signal: ac.signal, origin: req.raw };
    const callIds: string[] = [];
    const callId = (i: number) => (callIds[i] ??= ctx.tools.newId());
    const shell = (status: string, output: Obj[], usage: Obj | null) => ({ id, object: 'response', created_at: created, status, model: ctx.modelName, output, usage, error: null, incomplete_details: null, instructions: b.instructions ?? null, tools: b.tools ?? [], parallel_tool_calls: true });
    const usageOf = (r: { promptTokens: number; completionTokens: number; cachedTokens: number }) => ({ input_tokens: r.promptTokens, input_tokens_details: { cached_tokens: r.cachedTokens }, output_tokens: r.completionTokens, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: r.promptTokens + r.completionTokens });
    const items = (reasoning: string, text: string, calls: { name: string; arguments: Obj }[]) => {
      const out: Obj[] = [];
      if (reasoning) out.push({ type: 'reasoning', id: `rs_${id}`, summary: [], content: [{ type: 'reasoning_text', text: reasoning }] });
      if (text || !calls.length) out.push({ type: 'message', id: `msg_${id}`, role: 'assistant', status: 'completed', content: [{ type: 'output_text', text, annotations: [] }] });
      calls.forEach((c, i) => out.push({ type: 'function_call', id: `fc_${callId(i)}`, call_id: callId(i), name: c.name, arguments: JSON.stringify(c.arguments), status: 'completed' }));
      return out;
    };

    if (b.stream !== true) {
      const r = await ctx.coordinator.run(common);
      rememberTurn(ctx, r.rawText, r.parsed.reasoning, r.parsed.toolCalls.map((_, i) => callId(i)), think);
      return shell('completed', items(r.parsed.reasoning, r.parsed.content, r.parsed.toolCalls), usageOf(r));
    }

    ctx.coordinator.admit(); // a full queue is a 503 before the stream opens
    reply.hijack();
    const sse = new Sse(reply.raw);
    let seq = 0;
    const ev = (type: string, data: Obj) => sse.event(type, { type, sequence_number: seq++, ...data });
    ev('response.created', { response: shell('in_progress', [], null) });
    ev('response.in_progress', { response: shell('in_progress', [], null) });
    let outIndex = -1;
    let open: 'reasoning' | 'message' | null = null;
    let reasoning = '', text = '';
    const closeOpen = () => {
      if (open === 'reasoning') {
        ev('response.reasoning_text.done', { item_id: `rs_${id}`, output_index: outIndex, content_index: 0, text: reasoning });
        ev('response.output_item.done', { output_index: outIndex, item: items(reasoning, '', [])[0] });
      } else if (open === 'message') {
        ev('response.output_text.done', { item_id: `msg_${id}`, output_index: outIndex, content_index: 0, text });
        ev('response.content_part.done', { item_id: `msg_${id}`, output_index: outIndex, content_index: 0, part: { type: 'output_text', text, annotations: [] } });
        ev('response.output_item.done', { output_index: outIndex, item: { type: 'message', id: `msg_${id}`, role: 'assistant', status: 'completed', content: [{ type: 'output_text', text, annotations: [] }] } });
      }
      open = null;
    };
    try {
      const r = await ctx.coordinator.run({
        ...common,
        onEvent: (e) => {
          if (e.type === 'reasoning') {
            if (open !== 'reasoning') { closeOpen(); outIndex++; open = 'reasoning'; ev('response.output_item.added', { output_index: outIndex, item: { type: 'reasoning', id: `rs_${id}`, summary: [], content: [] } }); }
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
            const cid = callId(e.index);
            const args = JSON.stringify(e.call.arguments);
            ev('response.output_item.added', { output_index: outIndex, item: { type: 'function_call', id: `fc_${cid}`, call_id: cid, name: e.call.name, arguments: '', status: 'in_progress' } });
            ev('response.function_call_arguments.delta', { item_id: `fc_${cid}`, output_index: outIndex, delta: args });
            ev('response.function_call_arguments.done', { item_id: `fc_${cid}`, output_index: outIndex, arguments: args });
            ev('response.output_item.done', { output_index: outIndex, item: { type: 'function_call', id: `fc_${cid}`, call_id: cid, name: e.call.name, arguments: args, status: 'completed' } });
          }
        },
      });
      closeOpen();
      rememberTurn(ctx, r.rawText, r.parsed.reasoning, r.parsed.toolCalls.map((_, i) => callId(i)), think);
      ev('response.completed', { response: shell('completed', items(r.parsed.reasoning, r.parsed.content, r.parsed.toolCalls), usageOf(r)) });
    } catch (e) {
      ev('error', { message: (e as Error).message, code: 'internal' });
    } finally {
      sse.end();
    }
    return reply;
  });
}
