/** POST /v1/messages (Anthropic Messages), streaming and not: thinking blocks, tool_use blocks. */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { renderChat } from '../chat/render.js';
import { ChatTemplateError } from '../chat/types.js';
import { ApiError, jsonBody } from './errors.js';
import { fromAnthropic, toolsFromAnthropic } from './convert.js';
import { rememberTurn } from './openai-chat.js';
import { maxTokens, sampling, stops, thinkingOn } from './sampling.js';
import { Sse } from './sse.js';
import { messagesBody } from './schemas.js';
import { recallToolIds, toolIdsIn, type ServerContext } from './context.js';

type Obj = Record<string, unknown>;
const STOP: Record<string, string> = { stop: 'end_turn', stop_sequence: 'stop_sequence', length: 'max_tokens', tool_calls: 'tool_use', abort: 'end_turn', timeout: 'max_tokens' };

export function registerAnthropicMessages(app: FastifyInstance, ctx: ServerContext): void {
  app.post('/v1/messages', { schema: { body: messagesBody } }, async (req: FastifyRequest, reply: FastifyReply) => {
    const b = jsonBody(req.body);
    if (b.max_tokens === undefined) throw new ApiError('invalid_request', 'max_tokens is required');
    const tools = (b.tool_choice as Obj | undefined)?.type === 'none' ? undefined : toolsFromAnthropic(b.tools);
    const think = thinkingOn(b);
    let prompt: string;
    recallToolIds(ctx, toolIdsIn(b.messages));
    try {
      prompt = renderChat(fromAnthropic(b.system, b.messages, ctx.tools, tools), { tools, enableThinking: think ? undefined : false });
    } catch (e) {
      if (e instanceof ChatTemplateError) throw new ApiError('template_error', e.message);
      throw e;
    }
    const id = `msg_${ctx.tools.newId('')}`;
    const model = typeof b.model === 'string' ? b.model : ctx.modelName;
    const ac = new AbortController();
    // the response closing before it finished means the client went away: cancel the generation
    reply.raw.on('close', () => { if (!reply.raw.writableFinished) ac.abort(); });
    const common = { prompt, startInReasoning: think, tools, maxTokens: maxTokens(b, ['max_tokens'], ctx.defaultMaxTokens), sampling: sampling(b, ctx.sampling), stop: stops(b.stop_sequences, 'stop_sequences'), signal: ac.signal, origin: req.raw };
    const ids: string[] = [];
    const toolId = (i: number) => (ids[i] ??= ctx.tools.newId('toolu_'));

    if (b.stream !== true) {
      const r = await ctx.coordinator.run(common);
      const content: Obj[] = [];
      if (r.parsed.reasoning) content.push({ type: 'thinking', thinking: r.parsed.reasoning, signature: '' });
      if (r.parsed.content) content.push({ type: 'text', text: r.parsed.content });
      r.parsed.toolCalls.forEach((c, i) => content.push({ type: 'tool_use', id: toolId(i), name: c.name, input: c.arguments }));
      rememberTurn(ctx, r.rawText, r.parsed.reasoning, ids, think);
      return {
        id, type: 'message', role: 'assistant', model, content, stop_reason: STOP[r.finish], stop_sequence: r.stopSequence ?? null,
        usage: { input_tokens: r.promptTokens - r.cachedTokens, output_tokens: r.completionTokens, cache_read_input_tokens: r.cachedTokens, cache_creation_input_tokens: 0 },
      };
    }

    ctx.coordinator.admit(); // a full queue is a 503 before the stream opens
    reply.hijack();
    const sse = new Sse(reply.raw);
    sse.event('message_start', { type: 'message_start', message: { id, type: 'message', role: 'assistant', model, content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 0, output_tokens: 0 } } });
    let index = -1;
    let open: 'thinking' | 'text' | null = null;
    const close = () => { if (open) { if (open === 'thinking') sse.event('content_block_delta', { type: 'content_block_delta', index, delta: { type: 'signature_delta', signature: '' } }); sse.event('content_block_stop', { type: 'content_block_stop', index }); open = null; } };
    const start = (kind: 'thinking' | 'text') => {
      if (open === kind) return;
      close();
      index++;
      open = kind;
      sse.event('content_block_start', { type: 'content_block_start', index, content_block: kind === 'thinking' ? { type: 'thinking', thinking: '', signature: '' } : { type: 'text', text: '' } });
    };
    try {
      const r = await ctx.coordinator.run({
        ...common,
        onEvent: (ev) => {
          if (ev.type === 'reasoning') { start('thinking'); sse.event('content_block_delta', { type: 'content_block_delta', index, delta: { type: 'thinking_delta', thinking: ev.text } }); }
          else if (ev.type === 'content') { start('text'); sse.event('content_block_delta', { type: 'content_block_delta', index, delta: { type: 'text_delta', text: ev.text } }); }
          else if (ev.type === 'tool_call_end') {
            close();
            index++;
            sse.event('content_block_start', { type: 'content_block_start', index, content_block: { type: 'tool_use', id: toolId(ev.index), name: ev.call.name, input: {} } });
            sse.event('content_block_delta', { type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json: JSON.stringify(ev.call.arguments) } });
            sse.event('content_block_stop', { type: 'content_block_stop', index });
          }
        },
      });
      close();
      rememberTurn(ctx, r.rawText, r.parsed.reasoning, ids, think);
      sse.event('message_delta', { type: 'message_delta', delta: { stop_reason: STOP[r.finish], stop_sequence: r.stopSequence ?? null }, usage: { output_tokens: r.completionTokens, input_tokens: r.promptTokens - r.cachedTokens, cache_read_input_tokens: r.cachedTokens } });
      sse.event('message_stop', { type: 'message_stop' });
    } catch (e) {
      const err = e instanceof ApiError ? e : new ApiError('internal', (e as Error).message);
      sse.event('error', { type: 'error', error: { type: 'api_error', message: err.message } });
    } finally {
      sse.end();
    }
    return reply;
  });
}
