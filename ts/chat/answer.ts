/**
 * The answer decoder: one assistant answer generated from a session that holds its prompt, as
 * every front end needs it — the server's turns, the agent, the CLI chat, the one-shot CLI and
 * q36-eval.
 * Around the decode loop (engine/generate.ts) it keeps the text (a streaming detokenizer), the
 * parse of reasoning / content / tool calls (OutputParser), stop strings (held back until they
 * cannot start one: StopScanner), the tokens fed instead of sampled (the end of the think block
 * when its budget is spent, the opening of a forced tool call), log-probabilities in OpenAI's
 * shape, and why it ended. One place, so a change to how answers are generated (speculative
 * decoding, grammars) is made once.
 */
import { OutputParser, type ParsedOutput, type ParserEvent } from './output-parser.js';
import { StopScanner } from './stop-scanner.js';
import { THINK_END, TOOL_CALL_OPEN } from './template-tokens.js';
import type { ToolSpec } from './tool-call.js';
import { generate, type GenerateOptions, type GenerateResult } from '../engine/generate.js';
import { Constraint, type Grammar } from '../grammar/constraint.js';
import type { SampleOptions, Session, TokenLogprob } from '../engine/types.js';
import type { Tokenizer } from '../tokenizer/tokenizer.js';

/** One generated token's log-probability, OpenAI's shape. */
export interface LogprobEntry {
  token: string;
  logprob: number;
  bytes: number[];
  top_logprobs: { token: string; logprob: number; bytes: number[] }[];
}

export interface AnswerOptions {
  /** most tokens to generate */
  maxTokens: number;
  sampling: SampleOptions;
  /** tool-call structure (tags, parameter headers) sampled greedily, values with `sampling` (server, agent) */
  greedyProtocol?: boolean;
  signal?: AbortSignal;
  /** the text as content, not parsed (completions, the one-shot CLI) */
  raw?: boolean;
  /** the answer begins inside a think block (thinking mode: the template opened it) */
  startInReasoning?: boolean;
  tools?: ToolSpec[];
  /** stop strings: the answer ends before the first one, which is never emitted */
  stop?: readonly string[];
  /** reasoning tokens before "\n</think>\n\n" is fed instead of sampled */
  thinkingBudget?: number;
  /** the answer must be a tool call (of this tool when named): its opening is fed once reasoning ends */
  forceToolCall?: { name?: string };
  /**
   * a grammar the answer follows (constrained decoding): a JSON document from where the think
   * block ends, or tool calls from the forced opening on; when the token budget would cut it,
   * its shortest completion is fed and the answer ends as 'length'
   */
  grammar?: Grammar;
  /** log-probabilities of each generated token with this many alternatives */
  logprobs?: number;
  onLogprob?: (e: LogprobEntry) => void;
  /** the same by token id (the one-shot CLI's --dump-logprobs file) */
  onTokenLogprobs?: GenerateOptions['onLogprobs'];
  /** each event as it is parsed (content after the stop-string check) */
  onEvent?: (ev: ParserEvent) => void;
  /** tokens fed before the decoder's own forced ones (a test's scripted turn) */
  script?: (step: number) => number | undefined;
  /** stop tokens (default the tokenizer's; none for raw token-id runs) */
  stopIds?: ReadonlySet<number>;
  /** which tokens enter the session (generate.ts; default 'non-stop': the live session holds the whole answer) */
  feed?: GenerateOptions['feed'];
  feedToken?: GenerateOptions['feedToken'];
  /** speculative decoding (generate.ts) */
  draft?: GenerateOptions['draft'];
  onLogits?: GenerateOptions['onLogits'];
  /** awaited before each step (q36-eval's pause) */
  gate?: GenerateOptions['gate'];
  /** after each token entered the session, with the answer text that entered so far */
  onFed?: (fedText: string) => void | Promise<void>;
  /** notes for a trace (the thinking budget closing the think block) */
  trace?: (event: string, data: Record<string, unknown>) => void;
}

export interface Answer {
  /** reasoning, content (up to a stop string) and tool calls; with raw, the text as content */
  parsed: ParsedOutput;
  /** all generated text (stop tokens excluded, stop strings included) */
  raw: string;
  tokens: number[];
  stop: GenerateResult['stop'];
  finish: 'stop' | 'length' | 'stop_sequence' | 'tool_calls' | 'abort';
  stopSequence?: string;
  /** generated tokens inside the think block */
  reasoningTokens: number;
  /** still inside the think block when it ended */
  inReasoning: boolean;
  logprobs: LogprobEntry[];
  decodeMs: number;
}

export async function decodeAnswer(s: Session, tok: Tokenizer, o: AnswerOptions): Promise<Answer> {
  const parser = new OutputParser({ startInReasoning: o.startInReasoning ?? false, tools: o.tools });
  const dec = tok.decoder();
  const stopIds = o.stopIds ?? tok.stopIds;
  let raw = '', fed = '', visible = '';
  // each emitted token's text until it entered the session (a draft step emits several first)
  const pending: string[] = [];
  let stopSequence: string | undefined;
  let reasoningTokens = 0;
  // answer text is held back while it could be the start of a stop string, so a stop string
  // never reaches the caller, streamed or not (as the providers do)
  const stopper = new StopScanner(o.stop ?? []);
  const emit = (events: ParserEvent[]) => {
    for (const ev of events) {
      if (ev.type !== 'content') { o.onEvent?.(ev); continue; }
      if (stopSequence !== undefined) continue;
      const { text, hit } = stopper.push(ev.text);
      if (text) { visible += text; o.onEvent?.({ type: 'content', text }); }
      if (hit !== undefined) stopSequence = hit;
    }
  };
  const feed = (t: string): ParserEvent[] => (o.raw ? (t ? [{ type: 'content', text: t }] : []) : parser.push(t));
  // tokens fed instead of sampled: a script's, the end of the think block when its budget is
  // spent, the opening of a tool call when the answer must be one
  const forced: number[] = [];
  let callForced = false;
  // the grammar: on from where the answer proper begins; `completing` once its shortest
  // completion was queued for a budget about to run out
  const g = o.grammar ? new Constraint(o.grammar, tok) : undefined;
  const callOpenId = tok.idOf(TOOL_CALL_OPEN);
  const endId = stopIds.has(tok.eosId) ? tok.eosId : [...stopIds][0];
  let oneCall: number | undefined;
  let gOn = false, completing = false, sampled = false, compEvery = 0;
  let docTokens: number | undefined;
  const budgetLeft = (step: number) => o.maxTokens - step;
  const grammarNext = (step: number) => {
    if (!g || completing) return;
    if (!gOn && (o.grammar!.kind === 'json' ? o.raw || !parser.inReasoning() : callForced && !o.grammar!.lazy)) gOn = true;
    if (!gOn || forced.length) return;
    // the completion is measured when the budget comes near it (every 16 steps before that)
    const left = budgetLeft(step);
    if (left > 256 && compEvery++ % 16 !== 0) return;
    // a margin: one token can lengthen the completion (open an array of required objects)
    const margin = (n: number) => n + 1 + Math.max(8, n >> 2);
    // tool calls may go on with another call after each one (a token that ends a call can begin
    // the next): near the budget, room for one more is kept, or the calls end
    const calls = o.grammar!.kind === 'call';
    const extra = calls ? (oneCall ??= new Constraint(o.grammar!, tok).completion().length) : 0;
    if (g.canEnd()) {
      if (calls && left <= margin(extra)) forced.push(endId);
      return;
    }
    const comp = g.completion();
    // the completion, then the end (the budget is spent: nothing may begin after it)
    if (comp.length && left <= margin(comp.length + extra)) { forced.push(...comp, endId); completing = true; o.trace?.('grammar-complete', { tokens: comp.length }); }
  };
  const next = (step: number): number | undefined => {
    sampled = false;
    const scripted = o.script?.(step);
    if (scripted !== undefined) return scripted;
    if (!forced.length && !o.raw && g && !gOn && o.grammar!.kind === 'json' && parser.inReasoning()) {
      // reasoning that would leave no room for the document is closed for the model
      const left = budgetLeft(step);
      if (left < 512) {
        docTokens ??= tok.encode(THINK_END).length + new Constraint(o.grammar!, tok).completion().length;
        if (left <= docTokens + 2) forced.push(...tok.encode(THINK_END));
      }
    }
    if (!forced.length && !o.raw) {
      if (o.thinkingBudget !== undefined && parser.inReasoning() && reasoningTokens >= o.thinkingBudget) {
        forced.push(...tok.encode(THINK_END));
        o.trace?.('thinking-budget', { reasoningTokens });
      } else if (o.forceToolCall && !callForced && !parser.inReasoning() && !parser.inProtocol()) {
        const name = o.forceToolCall.name;
        forced.push(...tok.encode(`${TOOL_CALL_OPEN}\n<function=${name ? `${name}>\n` : ''}`));
        callForced = true;
      }
    }
    grammarNext(step);
    if (!o.raw && parser.inReasoning()) reasoningTokens++;
    const f = forced.shift();
    sampled = f === undefined;
    return f;
  };
  const logprobs: LogprobEntry[] = [];
  const entry = (x: TokenLogprob) => { const str = tok.decode([x.id]); return { token: str, logprob: x.logprob, bytes: [...Buffer.from(str, 'utf8')] }; };
  let res: GenerateResult;
  try {
    res = await generate(s, {
      maxTokens: o.maxTokens, stopIds, signal: o.signal, feed: o.feed ?? 'non-stop', next,
      feedToken: o.feedToken, onLogits: o.onLogits, gate: o.gate, draft: o.draft,
      sampling: o.greedyProtocol ? () => (parser.inProtocol() ? { temperature: 0 } : o.sampling) : o.sampling,
      mask: g ? () => (gOn ? g.mask() : undefined) : undefined,
      // a mask known before the step goes to the device's arg-max; else it is computed while
      // the GPU runs the step
      nextMask: g ? () => (gOn && !completing ? g.knownMask() : undefined) : undefined,
      whileFeeding: g ? () => { if (gOn && !completing) g.mask(); } : undefined,
      logprobsTopK: o.logprobs,
      onLogprobs: o.logprobs === undefined ? undefined : (chosen, top) => {
        o.onTokenLogprobs?.(chosen, top);
        const e = { ...entry(chosen), top_logprobs: top.map(entry) };
        logprobs.push(e);
        o.onLogprob?.(e);
      },
      onToken: (id) => {
        // a lazy call grammar begins with the model's own `<tool_call>` (outside its reasoning)
        if (g && !gOn && !completing && o.grammar!.kind === 'call' && o.grammar!.lazy && id === callOpenId && !o.raw && !parser.inReasoning()) gOn = true;
        if (g && gOn && !stopIds.has(id) && !g.accept(id)) {
          // a sampled token always fits its mask; a fed one (a script's) may not: the grammar stops there
          if (sampled) throw new Error(`grammar: token ${id} was sampled outside its mask`);
          gOn = false;
          completing = true;
          o.trace?.('grammar-off', { token: id });
        }
        if (stopIds.has(id)) { pending.push(''); return; }
        const text = dec.push(id);
        raw += text;
        pending.push(text);
        emit(feed(text));
        return stopSequence === undefined;
      },
      onFed: async () => {
        fed += pending.shift() ?? '';
        await o.onFed?.(fed);
      },
    });
  } finally {
    const tail = dec.end();
    raw += tail;
    emit(feed(tail));
    if (!o.raw) emit(parser.end());
    if (stopSequence === undefined) { const rest = stopper.flush(); if (rest) { visible += rest; o.onEvent?.({ type: 'content', text: rest }); } }
  }
  const parsed = o.raw ? { reasoning: '', content: visible, toolCalls: [] } : parser.result();
  // the answer ends before the stop string (and whatever followed it in the same token)
  if (stopSequence !== undefined) parsed.content = visible;
  let finish: Answer['finish'] = stopSequence !== undefined ? 'stop_sequence' : ({ eos: 'stop', length: 'length', callback: 'stop', abort: 'abort' } as const)[res.stop];
  if (finish === 'stop' && parsed.toolCalls.length > 0) finish = 'tool_calls';
  // a document the budget cut short and the grammar completed: the model did not finish it
  if (completing && gOn && finish !== 'abort') finish = 'length';
  return { parsed, raw, tokens: res.tokens, stop: res.stop, finish, stopSequence, reasoningTokens, inReasoning: !o.raw && parser.inReasoning(), logprobs, decodeMs: res.decodeMs };
}
