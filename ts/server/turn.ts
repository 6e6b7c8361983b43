/**
 * The one turn core behind every API adapter. An adapter parses its request into a TurnSpec and
 * shapes events through an ApiWriter; everything in between happens here, once:
 *
 *   render the conversation (template errors → 400) → count its tokens and refuse a prompt that
 *   does not fit the context *before* a stream opens (each provider's error shape and wording)
 *   → admission (a full queue is a 503 before a stream opens) → cancel on client disconnect →
 *   the coordinator's turn (prefix reuse, generation) → tool-call ids → the tool memory updated
 *   with the exact sampled turn → the result, or an error from the catalogue (in-stream too).
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ParserEvent } from '../chat/output-parser.js';
import type { Grammar } from '../grammar/constraint.js';
import { renderChat } from '../chat/render.js';
import { ChatTemplateError, type ChatMessage } from '../chat/types.js';
import { IM_END, THINK_CLOSE } from '../chat/template-tokens.js';
import type { SampleOptions } from '../engine/types.js';
import type { ServerContext } from './context.js';
import type { LogprobEntry, TurnResult } from './coordinator.js';
import { ApiError } from './errors.js';
import { Sse } from './sse.js';
import { requestScope } from './scope.js';

type Obj = Record<string, unknown>;

/** Whose error shape and wording a request gets. */
export type Provider = 'openai' | 'anthropic';

export interface TurnSpec {
  provider: Provider;
  /** a conversation, rendered with the chat template... */
  messages?: ChatMessage[];
  /** ...or a prompt rendered already: raw text (completions: no reasoning or tool parsing) unless `parse` */
  prompt?: string;
  /** the prompt is a rendered chat turn: parse reasoning and tool calls as for messages */
  parse?: boolean;
  tools?: Obj[];
  think: boolean;
  maxTokens: number;
  sampling: SampleOptions & { seed?: number };
  stop?: string[];
  /** prefix of the tool-call ids this API issues (call_, toolu_) */
  toolIdPrefix?: string;
  /** where template errors point (OpenAI `param`) */
  param?: string;
  /** reasoning tokens before the think block is closed for the model */
  thinkingBudget?: number;
  /** tool_choice required/any/named */
  forceToolCall?: { name?: string };
  /** what the answer must follow (structured output, a forced call's arguments) */
  grammar?: Grammar;
  /** the conversation ends with an assistant message to continue (Anthropic prefill) */
  continueAssistant?: boolean;
  /** log-probabilities with this many alternatives per token */
  logprobs?: number;
}

/** What a writer may ask while the turn runs. */
export interface TurnState {
  /** the id of tool call i (stable for the turn) */
  callId(i: number): string;
  /** prompt tokens (known before the stream opens) */
  promptTokens: number;
}

export interface TurnOutcome extends TurnResult {
  callIds: string[];
}

/** How an API shapes a streamed turn. */
export interface ApiWriter {
  /** the stream opened: the prompt is counted already */
  open(t: { promptTokens: number }): void;
  /** a generated token's log-probability (only when the request asked for them) */
  logprob?(e: LogprobEntry): void;
  delta(ev: ParserEvent, t: TurnState): void;
  finish(r: TurnOutcome): void;
  /** a failure after the stream opened (already an ApiError from the catalogue) */
  error(e: ApiError): void;
  /** a protocol-legal data event that changes nothing for the client, sent while the stream is silent (sse.ts) */
  keepAlive?(): void;
}

/** The provider's own refusal of a prompt longer than the context. */
export function contextError(p: Provider, tokens: number, ctx: number): ApiError {
  return new ApiError('context_length_exceeded', p === 'anthropic'
    ? `prompt is too long: ${tokens} tokens > ${ctx - 1} maximum`
    : `This model's maximum context length is ${ctx} tokens. However, your messages resulted in ${tokens} tokens. Please reduce the length of the messages.`, 'messages');
}

/** The most UTF-8 bytes one token stands for (its byte-level form's length bounds it), per tokenizer. */
const longest = new WeakMap<object, number>();
function maxTokenBytes(tok: { tokens: readonly string[] }): number {
  let m = longest.get(tok);
  if (m === undefined) {
    m = 1;
    for (const t of tok.tokens) m = Math.max(m, Buffer.byteLength(t, 'utf8'));
    longest.set(tok, m);
  }
  return m;
}

/** A prepared turn: rendered, counted, admitted. */
export interface PreparedTurn {
  spec: TurnSpec;
  prompt: string;
  tokens: number[];
}

export function prepareTurn(ctx: ServerContext, spec: TurnSpec, o: { admit?: boolean; tokens?: number[] } = {}): PreparedTurn {
  let prompt: string;
  if (spec.prompt !== undefined) prompt = spec.prompt;
  else {
    try {
      prompt = renderChat(spec.messages ?? [], { tools: spec.tools, enableThinking: spec.think ? undefined : false, addGenerationPrompt: !spec.continueAssistant });
      // a prefilled answer: the model continues the last assistant message, so its end marker goes
      if (spec.continueAssistant) {
        const end = `${IM_END}\n`;
        if (!prompt.endsWith(end)) throw new ApiError('invalid_request', 'the final assistant message cannot be continued', spec.param);
        prompt = prompt.slice(0, -end.length);
      }
    } catch (e) {
      if (e instanceof ChatTemplateError) throw new ApiError('template_error', e.message, spec.param);
      throw e;
    }
  }
  const engine = ctx.coordinator.engine;
  // a prompt whose bytes cannot fit even at the vocabulary's longest token is refused before it is
  // tokenized (encoding a 30 MB prompt held every client up for seconds, for the same refusal)
  if (!o.tokens) {
    const atLeast = Math.ceil(Buffer.byteLength(prompt, 'utf8') / maxTokenBytes(engine.tokenizer));
    if (atLeast + 1 > engine.options.ctx) throw contextError(spec.provider, atLeast, engine.options.ctx);
  }
  // the caller may know the prompt's tokens better than a fresh encoding (a live continuation: the session's own)
  const tokens = o.tokens ?? engine.tokenizer.encode(prompt);
  if (tokens.length + 1 > engine.options.ctx) throw contextError(spec.provider, tokens.length, engine.options.ctx);
  if (o.admit !== false) ctx.coordinator.admit();
  return { spec, prompt, tokens };
}

/** Runs a prepared turn to its outcome; the tool memory learns the sampled turn. */
export async function executeTurn(ctx: ServerContext, t: PreparedTurn, o: { signal: AbortSignal; origin?: object; scope?: string; onEvent?: (ev: ParserEvent, st: TurnState) => void; onLogprob?: (e: LogprobEntry) => void; checkpointEnd?: boolean }): Promise<TurnOutcome> {
  const callIds: string[] = [];
  const state: TurnState = { callId: (i) => (callIds[i] ??= ctx.tools.newId(t.spec.toolIdPrefix ?? 'call_')), promptTokens: t.tokens.length };
  const s = t.spec;
  const r = await ctx.coordinator.run({
    prompt: t.prompt, tokens: t.tokens, scope: o.scope, startInReasoning: (s.prompt === undefined || s.parse === true) && s.think && !s.continueAssistant, tools: s.tools, maxTokens: s.maxTokens,
    sampling: s.sampling, stop: s.stop, signal: o.signal, origin: o.origin, raw: s.prompt !== undefined && s.parse !== true,
    thinkingBudget: s.think ? s.thinkingBudget : undefined, forceToolCall: s.tools?.length ? s.forceToolCall : undefined, grammar: s.grammar,
    logprobs: s.logprobs, onLogprob: o.onLogprob, checkpointEnd: o.checkpointEnd,
    onEvent: o.onEvent ? (ev) => o.onEvent!(ev, state) : undefined,
  });
  r.parsed.toolCalls.forEach((_, i) => state.callId(i));
  rememberTurn(ctx, r.rawText, r.parsed.reasoning, callIds, s.think);
  return { ...r, callIds };
}

/** Remembers the sampled turn under its tool-call ids (exact replay of the next request). */
export function rememberTurn(ctx: ServerContext, raw: string, reasoning: string, ids: string[], think: boolean): void {
  if (!ids.length) return;
  const i = raw.indexOf(THINK_CLOSE);
  const after = think && i >= 0 ? raw.slice(i + THINK_CLOSE.length) : raw;
  ctx.tools.remember(ids, { reasoning, content: after });
}

/**
 * An HTTP turn, streamed or not: `body` shapes a non-streamed result, `writer` a stream. Errors
 * before the stream opens are thrown (the app's error handler answers them in the provider's
 * shape); errors after it go to the writer.
 */
export async function serveTurn(ctx: ServerContext, req: FastifyRequest, reply: FastifyReply, spec: TurnSpec,
  api: { stream: boolean; body: (r: TurnOutcome, all: TurnOutcome[]) => unknown; writer: (sse: Sse) => ApiWriter; n?: number }): Promise<unknown> {
  const prepared = prepareTurn(ctx, spec);
  const scope = requestScope(ctx.cacheScope, req.headers);
  const ac = new AbortController();
  // the response closing before it finished means the client went away: cancel the generation
  reply.raw.on('close', () => { if (!reply.raw.writableFinished) ac.abort(); });
  if (!api.stream) {
    // n choices: the same prompt n times in a row (each after the first reuses the whole prompt)
    const all: TurnOutcome[] = [];
    for (let i = 0; i < (api.n ?? 1); i++) all.push(await executeTurn(ctx, i ? prepareTurn(ctx, spec) : prepared, { signal: ac.signal, origin: req.raw, scope }));
    return api.body(all[0], all);
  }
  reply.hijack();
  const sse = new Sse(reply.raw, ctx.keepAliveMs);
  const w = api.writer(sse);
  if (w.keepAlive) sse.onIdle = () => w.keepAlive!();
  w.open({ promptTokens: prepared.tokens.length });
  try {
    w.finish(await executeTurn(ctx, prepared, { signal: ac.signal, origin: req.raw, scope, onEvent: (ev, st) => w.delta(ev, st), onLogprob: w.logprob?.bind(w) }));
  } catch (e) {
    const err = e instanceof ApiError ? e : new ApiError('internal', (e as Error).message);
    w.error(err);
  } finally {
    sse.end();
  }
  return reply;
}
