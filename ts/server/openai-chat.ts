/** POST /v1/chat/completions (OpenAI Chat Completions), streaming and not. */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { renderChat } from '../chat/render.js';
import { ChatTemplateError } from '../chat/types.js';
import { ApiError, jsonBody } from './errors.js';
import { fromOpenAI, toolsFromOpenAI } from './convert.js';
import { maxTokens, sampling, stops, thinkingOn } from './sampling.js';
import { Sse } from './sse.js';
import { chatCompletionsBody } from './schemas.js';
import { recallToolIds, toolIdsIn, type ServerContext } from './context.js';

type Obj = Record<string, unknown>;
const FINISH: Record<string, string> = { stop: 'stop', stop_sequence: 'stop', length: 'length', tool_calls: 'tool_calls', abort: 'stop', timeout: 'length' };

export function registerOpenAIChat(app: FastifyInstance, ctx: ServerContext): void {
  app.post('/v1/chat/completions', { schema: { body: chatCompletionsBody } }, async (req: FastifyRequest, reply: FastifyReply) => {
    const b = jsonBody(req.body);
    const tools = b.tool_choice === 'none' ? undefined : toolsFromOpenAI(b.tools);
    const think = thinkingOn(b);
    let prompt: string;
    recallToolIds(ctx, toolIdsIn(b.messages));
    try {
      prompt = renderChat(fromOpenAI(b.messages, ctx.tools, tools), { tools, enableThinking: think ? undefined : false });
    } catch (e) {
      if (e instanceof ChatTemplateError) throw new ApiError('template_error', e.message, 'messages');
      throw e;
    }
    const id = `chatcmpl-${ctx.tools.newId('')}`;
    const created = Math.floor(Date.now() / 1000);
    const model = ctx.modelName;
    const stream = b.stream === true;
    const includeUsage = stream && (b.stream_options as Obj | undefined)?.include_usage === true;
    const ac = new AbortController();
    // the response closing before it finished means the client went away: cancel the generation
    reply.raw.on('close', () => { if (!reply.raw.writableFinished) ac.abort(); });
    const common = { prompt, startInReasoning: think, tools, maxTokens: maxTokens(b, ['max_completion_tokens', 'max_tokens'], ctx.defaultMaxTokens), sampling: sampling(b, ctx.sampling), stop: stops(b.stop, 'stop'), signal: ac.signal, origin: req.raw };
    const callIds: string[] = [];
    const callId = (i: number) => (callIds[i] ??= ctx.tools.newId());

    if (!stream) {
      const r = await ctx.coordinator.run(common);
      const toolCalls = r.parsed.toolCalls.map((c, i) => ({ id: callId(i), type: 'function', function: { name: c.name, arguments: JSON.stringify(c.arguments) } }));
      rememberTurn(ctx, r.rawText, r.parsed.reasoning, callIds, think);
      return {
        id, object: 'chat.completion', created, model,
        choices: [{ index: 0, finish_reason: FINISH[r.finish], logprobs: null,
          message: { role: 'assistant', content: r.parsed.content || (toolCalls.length ? null : ''), ...(r.parsed.reasoning ? { reasoning_content: r.parsed.reasoning } : {}), ...(toolCalls.length ? { tool_calls: toolCalls } : {}) } }],
        usage: { prompt_tokens: r.promptTokens, completion_tokens: r.completionTokens, total_tokens: r.promptTokens + r.completionTokens, prompt_tokens_details: { cached_tokens: r.cachedTokens } },
      };
    }

    ctx.coordinator.admit(); // a full queue is a 503 before the stream opens
    reply.hijack();
    const sse = new Sse(reply.raw);
    const chunk = (delta: Obj, finish: string | null = null) => sse.data({ id, object: 'chat.completion.chunk', created, model, choices: [{ index: 0, delta, finish_reason: finish, logprobs: null }] });
    chunk({ role: 'assistant', content: '' });
    const argCount: number[] = [];
    try {
      const r = await ctx.coordinator.run({
        ...common,
        onEvent: (ev) => {
          if (ev.type === 'reasoning') chunk({ reasoning_content: ev.text });
          else if (ev.type === 'content') chunk({ content: ev.text });
          else if (ev.type === 'tool_call_start') chunk({ tool_calls: [{ index: ev.index, id: callId(ev.index), type: 'function', function: { name: ev.name, arguments: '' } }] });
          else if (ev.type === 'tool_call_arg') {
            const n = argCount[ev.index] ?? 0;
            argCount[ev.index] = n + 1;
            chunk({ tool_calls: [{ index: ev.index, function: { arguments: `${n ? ', ' : '{'}${JSON.stringify(ev.key)}: ${JSON.stringify(ev.value)}` } }] });
          } else if (ev.type === 'tool_call_end') {
            chunk({ tool_calls: [{ index: ev.index, function: { arguments: argCount[ev.index] ? '}' : '{}' } }] });
          }
        },
      });
      rememberTurn(ctx, r.rawText, r.parsed.reasoning, callIds, think);
      chunk({}, FINISH[r.finish]);
      if (includeUsage) sse.data({ id, object: 'chat.completion.chunk', created, model, choices: [], usage: { prompt_tokens: r.promptTokens, completion_tokens: r.completionTokens, total_tokens: r.promptTokens + r.completionTokens, prompt_tokens_details: { cached_tokens: r.cachedTokens } } });
      sse.raw('data: [DONE]\n\n');
    } catch (e) {
      const err = e instanceof ApiError ? e : new ApiError('internal', (e as Error).message);
      sse.data({ error: { message: err.message, type: 'api_error', code: err.code } });
    } finally {
      sse.end();
    }
    return reply;
  });
}

/** Remembers the sampled turn under its tool-call ids (exact replay of the next request). */
export function rememberTurn(ctx: ServerContext, raw: string, reasoning: string, ids: string[], think: boolean): void {
  if (!ids.length) return;
  const i = raw.indexOf('</think>');
  const after = think && i >= 0 ? raw.slice(i + '</think>'.length) : raw;
  ctx.tools.remember(ids, { reasoning, content: after });
}
