/** POST /v1/completions (OpenAI legacy completions): raw prompt text, no chat template. */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError, jsonBody } from './errors.js';
import { maxTokens, sampling, stops } from './sampling.js';
import { Sse } from './sse.js';
import { completionsBody } from './schemas.js';
import type { ServerContext } from './context.js';

type Obj = Record<string, unknown>;
const FINISH: Record<string, string> = { stop: 'stop', stop_sequence: 'stop', length: 'length', tool_calls: 'stop', abort: 'stop', timeout: 'length' };

export function registerOpenAICompletions(app: FastifyInstance, ctx: ServerContext): void {
  app.post('/v1/completions', { schema: { body: completionsBody } }, async (req: FastifyRequest, reply: FastifyReply) => {
    const b = jsonBody(req.body);
    let prompt: string;
    if (typeof b.prompt === 'string') prompt = b.prompt;
    else if (Array.isArray(b.prompt) && b.prompt.length === 1 && typeof b.prompt[0] === 'string') prompt = b.prompt[0];
    else throw new ApiError('invalid_request', 'prompt must be a string (or an array with one string)', 'prompt');
    if (prompt.length === 0) throw new ApiError('invalid_request', 'prompt is empty', 'prompt');
    const id = `cmpl-${ctx.tools.newId('')}`;
    const created = Math.floor(Date.now() / 1000);
    const ac = new AbortController();
    reply.raw.on('close', () => { if (!reply.raw.writableFinished) ac.abort(); });
    const common = { prompt, startInReasoning: false, raw: true, maxTokens: maxTokens(b, ['max_tokens'], 16), sampling: sampling(b, ctx.sampling), stop: stops(b.stop, 'stop'), signal: ac.signal, origin: req.raw };
    const usage = (r: { promptTokens: number; completionTokens: number; cachedTokens: number }) => ({ prompt_tokens: r.promptTokens, completion_tokens: r.completionTokens, total_tokens: r.promptTokens + r.completionTokens, prompt_tokens_details: { cached_tokens: r.cachedTokens } });
    if (b.stream !== true) {
      const r = await ctx.coordinator.run(common);
      return { id, object: 'text_completion', created, model: ctx.modelName, choices: [{ index: 0, text: r.rawText, finish_reason: FINISH[r.finish], logprobs: null }], usage: usage(r) };
    }
    ctx.coordinator.admit(); // a full queue is a 503 before the stream opens
    reply.hijack();
    const sse = new Sse(reply.raw);
    const chunk = (text: string, finish: string | null) => sse.data({ id, object: 'text_completion', created, model: ctx.modelName, choices: [{ index: 0, text, finish_reason: finish, logprobs: null }] });
    try {
      const r = await ctx.coordinator.run({ ...common, onEvent: (ev) => { if (ev.type === 'content') chunk(ev.text, null); } });
      chunk('', FINISH[r.finish]);
      if ((b.stream_options as Obj | undefined)?.include_usage === true) sse.data({ id, object: 'text_completion', created, model: ctx.modelName, choices: [], usage: usage(r) });
      sse.raw('data: [DONE]\n\n');
    } catch (e) {
      sse.data({ error: { message: (e as Error).message, type: 'api_error' } });
    } finally {
      sse.end();
    }
    return reply;
  });
}
