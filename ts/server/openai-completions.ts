/** POST /v1/completions (OpenAI legacy completions): raw prompt text, no chat template; the turn itself is turn.ts. */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError, jsonBody, openaiError } from './errors.js';
import { maxTokens, sampling, stops, unsupported } from './sampling.js';
import { completionsBody } from './schemas.js';
import type { Sse } from './sse.js';
import type { ServerContext } from './context.js';
import { serveTurn, type ApiWriter, type TurnOutcome } from './turn.js';

type Obj = Record<string, unknown>;
const FINISH: Record<string, string> = { stop: 'stop', stop_sequence: 'stop', length: 'length', tool_calls: 'stop', abort: 'stop', timeout: 'length' };

export function registerOpenAICompletions(app: FastifyInstance, ctx: ServerContext): void {
  app.post('/v1/completions', { schema: { body: completionsBody } }, async (req: FastifyRequest, reply: FastifyReply) => {
    const b = jsonBody(req.body);
    unsupported(b, 'openai');
    if (b.logprobs !== undefined && b.logprobs !== null) throw new ApiError('invalid_request', 'logprobs: not supported on /v1/completions yet (chat completions have them)', 'logprobs');
    if (typeof b.n === 'number' && b.n > 1) throw new ApiError('invalid_request', 'n: n > 1 is supported on non-streamed chat completions only', 'n');
    let prompt: string;
    if (typeof b.prompt === 'string') prompt = b.prompt;
    else if (Array.isArray(b.prompt) && b.prompt.length === 1 && typeof b.prompt[0] === 'string') prompt = b.prompt[0];
    else throw new ApiError('invalid_request', 'prompt must be a string (or an array with one string)', 'prompt');
    if (prompt.length === 0) throw new ApiError('invalid_request', 'prompt is empty', 'prompt');
    const id = `cmpl-${ctx.tools.newId('')}`;
    const created = Math.floor(Date.now() / 1000);
    const usage = (r: TurnOutcome) => ({ prompt_tokens: r.promptTokens, completion_tokens: r.completionTokens, total_tokens: r.promptTokens + r.completionTokens, prompt_tokens_details: { cached_tokens: r.cachedTokens } });
    const body = (r: TurnOutcome) => ({ id, object: 'text_completion', created, model: ctx.modelName, choices: [{ index: 0, text: r.parsed.content, finish_reason: FINISH[r.finish], logprobs: null }], usage: usage(r) });
    const writer = (sse: Sse): ApiWriter => {
      const chunk = (text: string, finish: string | null) => sse.data({ id, object: 'text_completion', created, model: ctx.modelName, choices: [{ index: 0, text, finish_reason: finish, logprobs: null }] });
      return {
        open: () => {},
        keepAlive: () => chunk('', null),
        delta: (ev) => { if (ev.type === 'content') chunk(ev.text, null); },
        finish: (r) => {
          chunk('', FINISH[r.finish]);
          if ((b.stream_options as Obj | undefined)?.include_usage === true) sse.data({ id, object: 'text_completion', created, model: ctx.modelName, choices: [], usage: usage(r) });
          sse.raw('data: [DONE]\n\n');
        },
        error: (e) => sse.data(openaiError(e)),
      };
    };
    return serveTurn(ctx, req, reply, {
      provider: 'openai', prompt, think: false, param: 'prompt',
      maxTokens: maxTokens(b, ['max_tokens'], 16), sampling: sampling(b, ctx.sampling), stop: stops(b.stop, 'stop'),
    }, { stream: b.stream === true, body, writer });
  });
}
