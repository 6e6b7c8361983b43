/**
 * One coordinator owns the model: requests run one at a time in arrival order, each against the
 * single live session. Before a request, the live state is reused for the longest possible prefix:
 * first the token-prefix check, then the rendered-byte-prefix check (a client re-sending text that
 * tokenizes differently still hits), and only the rest is prefilled.
 */
import * as fs from 'node:fs';
import { OutputParser, type ParsedOutput, type ParserEvent } from '../chat/output-parser.js';
import type { ToolSpec } from '../chat/tool-call.js';
import { AbortError } from '../engine/common.js';
import { generate, type GenerateResult } from '../engine/generate.js';
import type { Engine, SampleOptions, Session, TokenLogprob } from '../engine/types.js';
import type { DiskCache } from './kv-disk/disk-cache.js';
import type { SaveReason } from './kv-disk/format.js';
import type { ToolMemory } from './tool-memory.js';
import { ApiError } from './errors.js';
import { StopScanner } from './stop-scanner.js';
import type { RamCache } from './ram-cache.js';
import { ASSISTANT_HEADER, IM_START, THINK_END, TOOL_CALL_OPEN } from '../chat/template-tokens.js';

export interface TurnRequest {
  prompt: string;
  startInReasoning: boolean;
  tools?: ToolSpec[];
  maxTokens: number;
  sampling: SampleOptions & { seed?: number };
  stop?: string[];
  signal: AbortSignal;
  onEvent?: (e: ParserEvent) => void;
  /** plain completion: no reasoning/tool parsing, every decoded piece is content */
  raw?: boolean;
  /** called while the prompt is prefilled (keep-alives, progress) */
  onProgress?: (done: number, total: number) => void;
  /**
   * reasoning tokens allowed before the think block is closed for the model ("\n</think>\n\n" is
   * fed instead of sampled) and it answers (reasoning_effort, budget_tokens)
   */
  thinkingBudget?: number;
  /** the answer must be a tool call (tool_choice required/any), of this tool when named */
  forceToolCall?: { name?: string };
  /** log-probabilities of each generated token with this many alternatives (OpenAI logprobs / top_logprobs) */
  logprobs?: number;
  /** called with each generated token's log-probability entry (streams attach them to their chunks) */
  onLogprob?: (e: LogprobEntry) => void;
  /** the prompt's tokens when the caller has them already (the turn core counts them first) */
  tokens?: number[];
  /** the HTTP request this turn serves: its usage is kept for the request log (usageOf) */
  origin?: object;
  /**
   * keep a rewind point where the answer ends: a later turn that forks from this one (the
   * Responses WebSocket mode's previous_response_id) resumes there instead of re-prefilling
   */
  checkpointEnd?: boolean;
}

/** One generated token's log-probability, OpenAI's shape. */
export interface LogprobEntry {
  token: string;
  logprob: number;
  bytes: number[];
  top_logprobs: { token: string; logprob: number; bytes: number[] }[];
}

export interface TurnResult {
  /** with checkpointEnd: the tokens the session holds after the turn and their text (a later turn from here reuses them exactly) */
  live?: { tokens: number[]; text: string };
  /** per generated token, when the request asked for log-probabilities */
  logprobs?: LogprobEntry[];
  parsed: ParsedOutput;
  rawText: string;
  promptTokens: number;
  cachedTokens: number;
  completionTokens: number;
  /** generated tokens that were reasoning (inside the think block) */
  reasoningTokens: number;
  /** timeout: --request-timeout ended the generation (the output is cut, like length) */
  finish: 'stop' | 'length' | 'tool_calls' | 'stop_sequence' | 'abort' | 'timeout';
  stopSequence?: string;
}

/** When and how checkpoints go to the disk cache (QuarkStar defaults). */
export interface DiskPolicy {
  cache: DiskCache;
  minTokens: number;
  coldMaxTokens: number;
  trimTokens: number;
  alignTokens: number;
  continuedIntervalTokens: number;
}

export const DEFAULT_DISK_POLICY = { minTokens: 512, coldMaxTokens: 30000, trimTokens: 32, alignTokens: 2048, continuedIntervalTokens: 10240 };

export interface CoordinatorOptions {
  engine: Engine;
  /** JSON-lines trace file */
  trace?: string;
  disk?: DiskPolicy;
  tools?: ToolMemory;
  /** warnings the operator must see (stderr in q36-server) */
  log?: (msg: string) => void;
  /** requests allowed to wait behind the running one; more are refused (503 + Retry-After) */
  maxQueue?: number;
  /** a request's whole time limit in ms, waiting included (0 = none) */
  requestTimeoutMs?: number;
  /** the in-memory prompt cache (side requests do not cost the main conversation its prefix) */
  ram?: RamCache;
}

/** Live sessions shorter than this are not worth keeping in the RAM cache. */
const RAM_MIN_TOKENS = 64;

export class Coordinator {
  private queue: Promise<unknown> = Promise.resolve();
  private session: Session;
  /** the text whose tokens the live session holds */
  private liveText = '';
  /** where the last turn's assistant answer starts (the checkpoint the next turn resumes from) */
  private lastTurnStart = 0;
  /** ...and its length in characters of the live text */
  private lastTurnStartChars = 0;
  /** requests admitted and not finished (the running one included) */
  private pending = 0;
  private usage = new WeakMap<object, TurnResult>();
  readonly stats = { ramSaves: 0, ramLoads: 0, requests: 0, prefilled: 0, reused: 0, diskLoads: 0, diskSaves: 0, refused: 0, timeouts: 0, generated: 0, prefillMs: 0, decodeMs: 0 };
  readonly engine: Engine;
  private readonly tracePath?: string;
  private readonly disk?: DiskPolicy;
  private readonly tools?: ToolMemory;
  private readonly log: (msg: string) => void;

  constructor(readonly o: CoordinatorOptions) {
    this.engine = o.engine;
    this.tracePath = o.trace;
    this.disk = o.disk;
    this.tools = o.tools;
    this.log = o.log ?? (() => {});
    this.session = o.engine.newSession();
  }

  /** Requests waiting for the model (not counting the one running). */
  get waiting(): number {
    return Math.max(0, this.pending - 1);
  }

  /**
   * Refuses a request when the queue is full. Called by an adapter before it opens a stream (the
   * refusal must be a 503, not an in-stream error); run() itself admits too.
   */
  admit(): void {
    const max = this.o.maxQueue ?? Infinity;
    if (this.pending > max) {
      this.stats.refused++;
      throw new ApiError('overloaded', `the server is busy: ${this.waiting} requests are already waiting (--max-queue ${max}); retry later`);
    }
  }

  /** Usage of the turn that served an HTTP request (for the request log). */
  usageOf(origin: object): TurnResult | undefined {
    return this.usage.get(origin);
  }

  /** Saves the session's first n tokens (n = all by default) to the disk cache. */
  private saveDisk(reason: SaveReason, text: string): void {
    if (!this.disk) return;
    const s = this.session;
    try {
      this.disk.cache.save({ reason, text, payload: s.savePayload(), tokens: s.tokens.length, ctx: this.engine.options.ctx, tools: this.tools?.within(text) });
      this.stats.diskSaves++;
      this.trace('disk-save', { reason, tokens: s.tokens.length });
    } catch (e) {
      this.log(`kv-disk: could not save a ${reason} checkpoint: ${(e as Error).message}`);
      this.trace('disk-error', { reason, error: (e as Error).message });
    }
  }

  /** Clean shutdown: the live state goes to disk. */
  saveLive(reason: SaveReason = 'shutdown'): void {
    if (this.disk && this.session.tokens.length >= this.disk.minTokens) this.saveDisk(reason, this.liveText);
  }

  /** Chars of the live text that are a byte prefix of `prompt`. */
  private liveMatch(prompt: string): number {
    let live = 0;
    while (live < this.liveText.length && live < prompt.length && this.liveText.charCodeAt(live) === prompt.charCodeAt(live)) live++;
    return live;
  }

  /**
   * Before an unrelated request replaces the live session, its conversation goes to the RAM
   * cache as of where its last answer started — the point its next turn resumes from (that turn
   * re-renders the answer without its think block). The rewind there is free: a checkpoint sits
   * exactly at that position.
   */
  private async keepInRam(prompt: string): Promise<void> {
    const ram = this.o.ram, s = this.session;
    if (!ram || s.tokens.length < RAM_MIN_TOKENS) return;
    const live = this.liveMatch(prompt);
    // the same conversation goes on from (at least) where its last answer began: nothing to keep
    if (live >= Math.min(this.lastTurnStartChars, this.liveText.length)) return;
    const at = this.lastTurnStart > 0 && this.lastTurnStart <= s.tokens.length ? this.lastTurnStart : s.tokens.length;
    try {
      if (at < s.tokens.length) await s.rewind(at);
      const text = this.engine.tokenizer.decode(s.tokens);
      ram.put(text, s.savePayload(), s.tokens.length);
      this.stats.ramSaves++;
      this.liveText = text;
      this.trace('ram-save', { tokens: s.tokens.length, cachedBytes: ram.bytes });
    } catch (e) {
      this.log(`ram cache: could not keep the live session: ${(e as Error).message}`);
    }
  }

  /** A RAM entry that is a longer byte prefix of the prompt than the live session replaces it. */
  private restoreFromRam(prompt: string): boolean {
    const ram = this.o.ram;
    if (!ram) return false;
    const entry = ram.lookup(prompt, this.liveMatch(prompt) + 1);
    if (!entry) return false;
    try {
      this.session.loadPayload(entry.payload);
    } catch (e) {
      this.log(`ram cache: entry skipped: ${(e as Error).message}`);
      return false;
    }
    this.liveText = entry.text;
    this.stats.ramLoads++;
    this.trace('ram-load', { tokens: entry.tokens });
    return true;
  }

  /** A disk file whose text is a longer byte prefix of the prompt than the live session replaces it. */
  private restoreFromDisk(prompt: string): void {
    if (!this.disk) return;
    const live = this.liveMatch(prompt);
    const entry = this.disk.cache.lookup(prompt, live + 1);
    const liveIsPrefix = live === this.liveText.length;
    if (!entry && !liveIsPrefix && this.session.tokens.length >= this.disk.minTokens && live < this.liveText.length / 2) this.saveDisk('evict', this.liveText);
    if (!entry) return;
    const f = this.disk.cache.load(entry.file);
    if (!f) return;
    if (!liveIsPrefix && this.session.tokens.length >= this.disk.minTokens) this.saveDisk('evict', this.liveText);
    try {
      this.session.loadPayload(f.payload);
    } catch (e) {
      // the file stays on disk (another server with other settings may use it); this one skips it
      this.disk.cache.skip(entry.file, (e as Error).message);
      this.trace('disk-error', { file: entry.file, error: (e as Error).message });
      return;
    }
    for (const [id, block] of f.tools) this.tools?.remember([id], { reasoning: '', content: block });
    this.liveText = f.text;
    this.stats.diskLoads++;
    this.trace('disk-load', { file: entry.file, tokens: f.header.tokens });
  }

  trace(event: string, data: Record<string, unknown>): void {
    if (!this.tracePath) return;
    try { fs.appendFileSync(this.tracePath, JSON.stringify({ t: new Date().toISOString(), event, ...data }) + '\n'); } catch { /* tracing never breaks serving */ }
  }

  run(req: TurnRequest): Promise<TurnResult> {
    try { this.admit(); } catch (e) { return Promise.reject(e); }
    this.pending++;
    const ms = this.o.requestTimeoutMs ?? 0;
    const timer = ms > 0 ? AbortSignal.timeout(ms) : undefined;
    const r = timer ? { ...req, signal: AbortSignal.any([req.signal, timer]) } : req;
    const job = this.queue.then(() => {
      if (timer?.aborted) { this.stats.timeouts++; throw new ApiError('timeout', `the request waited longer than its time limit (${ms / 1000} s) for the model`); }
      return this.turn(r);
    }).then((res) => {
      if (timer?.aborted && !req.signal.aborted && res.finish === 'abort') {
        this.stats.timeouts++;
        // cut during the prefill: nothing to return but the reason
        if (res.completionTokens === 0) throw new ApiError('timeout', `the request ran past its time limit (${ms / 1000} s) before the first token`);
        res.finish = 'timeout';
      }
      if (req.origin) this.usage.set(req.origin, res);
      return res;
    }).finally(() => { this.pending--; });
    this.queue = job.catch(() => undefined);
    return job;
  }

  /** Tokens for the prompt, reusing the live session's tokens when its text is a byte prefix. */
  private promptTokens(prompt: string, encoded?: number[]): number[] {
    const tok = this.engine.tokenizer;
    const direct = encoded ?? tok.encode(prompt);
    const live = this.session.tokens;
    const byToken = this.session.commonPrefix(direct);
    const after = byToken < live.length && this.liveText ? tok.encodeAfter({ tokens: live, text: this.liveText }, prompt) : undefined;
    if (after) {
      this.trace('cache', { decision: 'byte-prefix', liveTokens: live.length, tokenPrefix: byToken });
      return after;
    }
    this.trace('cache', { decision: byToken >= live.length ? 'token-prefix' : 'partial', liveTokens: live.length, tokenPrefix: byToken });
    return direct;
  }

  /** Index just after the last "<|im_start|>assistant\n" of the prompt (0 if none). */
  private turnStart(tokens: number[]): number {
    const tok = this.engine.tokenizer;
    const im = tok.idOf(IM_START);
    if (im === undefined) return 0;
    const head = tok.encode(ASSISTANT_HEADER);
    const i = tokens.lastIndexOf(im);
    if (i < 0 || head.some((t, k) => tokens[i + 1 + k] !== t)) return 0;
    return i + 1 + head.length;
  }

  private async turn(req: TurnRequest): Promise<TurnResult> {
    this.stats.requests++;
    const e = this.engine, tok = e.tokenizer, s = this.session;
    if (req.signal.aborted) throw new AbortError();
    await this.keepInRam(req.prompt);
    if (!this.restoreFromRam(req.prompt)) this.restoreFromDisk(req.prompt);
    const tokens = this.promptTokens(req.prompt, req.tokens);
    if (tokens.length + 1 > e.options.ctx) throw Object.assign(new Error(`prompt of ${tokens.length} tokens does not fit the context of ${e.options.ctx}`), { code: 'context_length_exceeded' });
    this.trace('request', { promptTokens: tokens.length, prompt: req.prompt });
    // Split points of the prefill: disk saves (cold, continued) and a checkpoint where the
    // assistant turn starts (the next request renders this turn's history without the think block,
    // so it diverges exactly there and can resume without re-prefilling).
    const common = s.commonPrefix(tokens);
    const actions = new Map<number, () => void>();
    const cut = this.turnStart(tokens);
    if (cut > common && cut < tokens.length) actions.set(cut, () => s.checkpoint());
    this.lastTurnStart = cut;
    this.lastTurnStartChars = cut > 0 ? tok.decode(tokens.slice(0, cut)).length : req.prompt.length;
    const d = this.disk;
    if (d) {
      const text = (n: number) => tok.decode(tokens.slice(0, n));
      const cold = Math.floor((tokens.length - d.trimTokens) / d.alignTokens) * d.alignTokens;
      if (common < d.minTokens && tokens.length <= d.coldMaxTokens && cold >= d.minTokens && cold > common) {
        const prev = actions.get(cold);
        actions.set(cold, () => { prev?.(); this.saveDisk('cold', text(cold)); });
      }
      for (let f = (Math.floor(common / d.continuedIntervalTokens) + 1) * d.continuedIntervalTokens; f < tokens.length; f += d.continuedIntervalTokens) {
        const prev = actions.get(f);
        actions.set(f, () => { prev?.(); this.saveDisk('continued', text(f)); });
      }
    }
    let reused = 0, evaluated = 0, first = true;
    const tPrefill = performance.now(), ev0 = s.evaluated;
    try {
      for (const point of [...[...actions.keys()].sort((a, b) => a - b), tokens.length]) {
        if (first) {
          ({ reused, evaluated } = await s.sync(tokens.slice(0, point), { signal: req.signal, progress: req.onProgress }));
          first = false;
        } else {
          await s.eval(tokens.slice(s.tokens.length, point), { signal: req.signal, progress: req.onProgress });
          evaluated = point - reused;
        }
        actions.get(point)?.();
      }
    } catch (err) {
      if (!(err instanceof AbortError)) throw err;
      // cancelled during the prefill: the session keeps what was evaluated, nothing is generated
      this.liveText = tok.decode(s.tokens);
      this.trace('cancelled', { during: 'prefill', tokens: s.tokens.length });
      return { parsed: { reasoning: '', content: '', toolCalls: [] }, rawText: '', promptTokens: tokens.length, cachedTokens: reused, completionTokens: 0, reasoningTokens: 0, finish: 'abort' };
    }
    this.stats.reused += reused;
    this.stats.prefilled += evaluated;
    // what the model really evaluated (a rewind to an older snapshot re-evaluates its gap)
    this.trace('prefill', { reused, evaluated: s.evaluated - ev0 });
    this.stats.prefillMs += performance.now() - tPrefill;
    const tDecode = performance.now();
    this.liveText = req.prompt;
    if (req.sampling.seed !== undefined) s.seed(req.sampling.seed);

    const parser = new OutputParser({ startInReasoning: req.startInReasoning, tools: req.tools });
    const dec = tok.decoder();
    let raw = '';
    let fed = ''; // text of the tokens that entered the session (the live text must match them)
    let visible = '';
    let finish: TurnResult['finish'];
    let pending = ''; // the text of the token being fed
    let stopSequence: string | undefined;
    let n = 0, reasoningTokens = 0;
    const budget = Math.min(req.maxTokens, e.options.ctx - s.tokens.length);
    // answer text is held back while it could be the start of a stop string, so a stop string
    // never reaches the client, streamed or not (as the providers do)
    const stopper = new StopScanner(req.stop ?? []);
    const emit = (events: ParserEvent[]) => {
      for (const ev of events) {
        if (ev.type !== 'content') { req.onEvent?.(ev); continue; }
        if (stopSequence !== undefined) continue;
        const { text, hit } = stopper.push(ev.text);
        if (text) { visible += text; req.onEvent?.({ type: 'content', text }); }
        if (hit !== undefined) stopSequence = hit;
      }
    };
    const feed = (t: string): ParserEvent[] => (req.raw ? (t ? [{ type: 'content', text: t }] : []) : parser.push(t));
    // tokens fed instead of sampled: the end of the think block when its budget is spent, the
    // opening of a tool call when the request forces one
    const forced: number[] = [];
    const logprobs: LogprobEntry[] = [];
    let callForced = false;
    const next = (): number | undefined => {
      if (!forced.length && !req.raw) {
        if (req.thinkingBudget !== undefined && parser.inReasoning() && reasoningTokens >= req.thinkingBudget) {
          forced.push(...tok.encode(THINK_END));
          this.trace('thinking-budget', { reasoningTokens });
        } else if (req.forceToolCall && !callForced && !parser.inReasoning() && !parser.inProtocol()) {
          const name = req.forceToolCall.name;
          forced.push(...tok.encode(`${TOOL_CALL_OPEN}\n<function=${name ? `${name}>\n` : ''}`));
          callForced = true;
        }
      }
      if (!req.raw && parser.inReasoning()) reasoningTokens++;
      return forced.shift();
    };
    const piece = (t: number) => tok.decode([t]);
    const entry = (x: TokenLogprob) => { const str = piece(x.id); return { token: str, logprob: x.logprob, bytes: [...Buffer.from(str, 'utf8')] }; };
    let res: GenerateResult | undefined;
    try {
      res = await generate(s, {
        maxTokens: budget, stopIds: tok.stopIds, signal: req.signal, feed: 'non-stop', next,
        // protocol structure (tags, parameter headers) is sampled greedily; values use the request's sampling
        sampling: () => (parser.inProtocol() ? { temperature: 0 } : req.sampling),
        logprobsTopK: req.logprobs,
        onLogprobs: (chosen, top) => { const e = { ...entry(chosen), top_logprobs: top.map(entry) }; logprobs.push(e); req.onLogprob?.(e); },
        onToken: (id) => {
          if (tok.stopIds.has(id)) return;
          const text = dec.push(id);
          raw += text;
          pending = text;
          emit(feed(text));
          return stopSequence === undefined;
        },
        onFed: () => {
          fed += pending;
          if (this.disk && s.tokens.length % this.disk.continuedIntervalTokens === 0) this.saveDisk('continued', req.prompt + fed);
        },
      });
    } finally {
      const tail = dec.end();
      raw += tail;
      emit(feed(tail));
      if (!req.raw) emit(parser.end());
      if (stopSequence === undefined) { const rest = stopper.flush(); if (rest) { visible += rest; req.onEvent?.({ type: 'content', text: rest }); } }
      this.liveText = req.prompt + fed;
    }
    n = res.tokens.length;
    if (req.checkpointEnd && res.stop !== 'abort') s.checkpoint();
    finish = stopSequence !== undefined ? 'stop_sequence' : ({ eos: 'stop', length: 'length', callback: 'stop', abort: 'abort' } as const)[res.stop];
    this.stats.generated += n;
    this.stats.decodeMs += performance.now() - tDecode;
    const parsed = req.raw ? { reasoning: '', content: visible, toolCalls: [] } : parser.result();
    // the answer ends before the stop string (and whatever followed it in the same token)
    if (stopSequence !== undefined) parsed.content = visible;
    if (finish === 'stop' && parsed.toolCalls.length > 0) finish = 'tool_calls';
    this.trace('generated', { tokens: n, finish, text: raw });
    return {
      parsed, rawText: raw, promptTokens: tokens.length, cachedTokens: reused, completionTokens: n, reasoningTokens, finish, stopSequence, ...(req.logprobs !== undefined ? { logprobs } : {}),
      ...(req.checkpointEnd ? { live: { tokens: s.tokens.slice(), text: this.liveText } } : {}),
    };
  }

  dispose(): void {
    this.session.dispose();
  }
}
