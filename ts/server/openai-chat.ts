/** POST /v1/chat/completions (OpenAI Chat Completions): request parsing and event shaping; the turn itself is turn.ts. */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError, jsonBody, openaiError } from './errors.js';
import { fromOpenAI, toolsFromOpenAI } from './convert.js';
import { logprobsOf, maxTokens, sampling, stops, thinkingBudget, thinkingOn, toolChoice, unsupported } from './sampling.js';
import type { LogprobEntry } from './coordinator.js';
import { chatCompletionsBody } from './schemas.js';
import type { Sse } from './sse.js';
import { recallToolIds, toolIdsIn, type ServerContext } from './context.js';
import { serveTurn, type ApiWriter, type TurnOutcome } from './turn.js';
import { answerGrammar, outputFormat } from './structured.js';

type Obj = Record<string, unknown>;
const FINISH: Record<string, string> = { stop: 'stop', stop_sequence: 'stop', length: 'length', tool_calls: 'tool_calls', abort: 'stop', timeout: 'length' };

export function registerOpenAIChat(app: FastifyInstance, ctx: ServerContext): void {
  app.post('/v1/chat/completions', { schema: { body: chatCompletionsBody } }, async (req: FastifyRequest, reply: FastifyReply) => {
    const b = jsonBody(req.body);
    unsupported(b, 'openai');
    const { tools, force } = toolChoice(b.tool_choice, 'openai', toolsFromOpenAI(b.tools));
    const think = thinkingOn(b);
    const grammar = answerGrammar({ format: outputFormat(b.response_format, 'response_format'), formatParam: 'response_format', tools, force });
    recallToolIds(ctx, toolIdsIn(b.messages));
    const messages = fromOpenAI(b.messages, ctx.tools, tools);
    const id = `chatcmpl-${ctx.tools.newId('')}`;
    const created = Math.floor(Date.now() / 1000);
    const model = ctx.modelName;
    const includeUsage = (b.stream_options as Obj | undefined)?.include_usage === true;
    const usage = (r: TurnOutcome) => ({ prompt_tokens: r.promptTokens, completion_tokens: r.completionTokens, total_tokens: r.promptTokens + r.completionTokens, prompt_tokens_details: { cached_tokens: r.cachedTokens }, completion_tokens_details: { reasoning_tokens: r.reasoningTokens } });

    const choice = (r: TurnOutcome, index: number) => {
      const toolCalls = r.parsed.toolCalls.map((c, i) => ({ id: r.callIds[i], type: 'function', function: { name: c.name, arguments: JSON.stringify(c.arguments) } }));
      return {
        index, finish_reason: FINISH[r.finish], logprobs: r.logprobs ? { content: r.logprobs, refusal: null } : null,
        message: { role: 'assistant', content: r.parsed.content || (toolCalls.length ? null : ''), ...(r.parsed.reasoning ? { reasoning_content: r.parsed.reasoning } : {}), ...(toolCalls.length ? { tool_calls: toolCalls } : {}) },
      };
    };
    // n choices: the prompt is counted once, the completions of every choice add up
    const body = (_r: TurnOutcome, all: TurnOutcome[]) => ({
      id, object: 'chat.completion', created, model, choices: all.map(choice),
      usage: { ...usage(all[0]), completion_tokens: all.reduce((n, x) => n + x.completionTokens, 0), total_tokens: all[0].promptTokens + all.reduce((n, x) => n + x.completionTokens, 0),
        completion_tokens_details: { reasoning_tokens: all.reduce((n, x) => n + x.reasoningTokens, 0) } },
    });

    const writer = (sse: Sse): ApiWriter => {
      // log-probabilities ride on the next chunk sent (the parser may hold text back for a while)
      let pending: LogprobEntry[] = [];
      const chunk = (delta: Obj, finish: string | null = null) => {
        const lp = pending.length ? { content: pending, refusal: null } : null;
        pending = [];
        sse.data({ id, object: 'chat.completion.chunk', created, model, choices: [{ index: 0, delta, finish_reason: finish, logprobs: lp }] });
      };
      const argCount: number[] = [];
      return {
        logprob: (e) => { pending.push(e); },
        open: () => chunk({ role: 'assistant', content: '' }),
        // an empty delta: a data event every chat-completions client skips
        keepAlive: () => chunk({}),
        delta: (ev, t) => {
          if (ev.type === 'reasoning') chunk({ reasoning_content: ev.text });
          else if (ev.type === 'content') chunk({ content: ev.text });
          else if (ev.type === 'tool_call_start') chunk({ tool_calls: [{ index: ev.index, id: t.callId(ev.index), type: 'function', function: { name: ev.name, arguments: '' } }] });
          else if (ev.type === 'tool_call_arg') {
            const n = argCount[ev.index] ?? 0;
            argCount[ev.index] = n + 1;
            chunk({ tool_calls: [{ index: ev.index, function: { arguments: `${n ? ', ' : '{'}${JSON.stringify(ev.key)}: ${JSON.stringify(ev.value)}` } }] });
          } else if (ev.type === 'tool_call_end') {
            chunk({ tool_calls: [{ index: ev.index, function: { arguments: argCount[ev.index] ? '}' : '{}' } }] });
          }
        },
        finish: (r) => {
          chunk({}, FINISH[r.finish]);
          if (includeUsage) sse.data({ id, object: 'chat.completion.chunk', created, model, choices: [], usage: usage(r) });
          sse.raw('data: [DONE]\n\n');
        },
        error: (e: ApiError) => sse.data(openaiError(e)),
      };
    };

    return serveTurn(ctx, req, reply, {
      provider: 'openai', messages, tools, think, param: 'messages', toolIdPrefix: 'call_', thinkingBudget: thinkingBudget(b), forceToolCall: force, grammar, logprobs: logprobsOf(b),
      maxTokens: maxTokens(b, ['max_completion_tokens', 'max_tokens'], ctx.defaultMaxTokens), sampling: sampling(b, ctx.sampling), stop: stops(b.stop, 'stop'),
    }, { stream: b.stream === true, body, writer, n: typeof b.n === 'number' ? b.n : 1 });
  });
}
