/**
 * One coordinator owns the model. It holds N live sessions (slots: 1 by default, more with
 * q36-server --batched-session N); a request owns a slot until it finishes, and requests beyond
 * the free slots wait in arrival order (bounded: --max-queue). A request takes the idle slot whose
 * live text is the longest byte prefix of its prompt; before a request, that slot's live state is
 * reused for the longest possible prefix: first the token-prefix check, then the rendered-byte-
 * prefix check (a client re-sending text that tokenizes differently still hits), and only the rest
 * is prefilled. Every model call goes through one executor (executor.ts): decode steps of several
 * slots are batched, prefills run in quanta between them.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { ParsedOutput, ParserEvent } from '../chat/output-parser.js';
import type { Grammar } from '../grammar/constraint.js';
import { decodeAnswer, type Answer, type LogprobEntry } from '../chat/answer.js';
import type { ToolSpec } from '../chat/tool-call.js';
import { AbortError } from '../engine/common.js';
import type { Engine, SampleOptions, Session } from '../engine/types.js';
import { DiskCache } from './kv-disk/disk-cache.js';
import type { SaveReason } from '../kvc/format.js';
import type { ToolMemory } from './tool-memory.js';
import { ApiError } from './errors.js';
import type { RamCache } from './ram-cache.js';
import { ASSISTANT_HEADER, IM_START } from '../chat/template-tokens.js';
import { ModelExecutor, type ExecutorOptions } from './executor.js';
import { draftOptions, type Drafter, type DraftSpec } from '../engine/draft/index.js';
import type { DraftOptions } from '../engine/generate.js';

export interface TurnRequest {
  prompt: string;
  /**
   * the client's cache scope (--cache-scope key: a hash of its API key): its turn reuses only
   * state that requests of the same scope left (live sessions, RAM and disk caches)
   */
  scope?: string;
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
  /** a grammar the answer follows (structured output; a forced call's tools and arguments) */
  grammar?: Grammar;
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

export type { LogprobEntry } from '../chat/answer.js';

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
  /** live sessions (slots) served at once (--batched-session N; default 1) */
  slots?: number;
  /** decode coalescing and prefill quanta (executor.ts defaults) */
  executor?: ExecutorOptions;
  /**
   * speculative decoding (--draft, --mtp): each slot's drafter, verified while only one
   * slot generates (with several, their tokens share batched steps instead)
   */
  draft?: DraftSpec & { /** tests: this drafter for each slot in place of the named kind's */ drafter?: () => Drafter };
}

/** One live session and what the coordinator knows about its contents. */
class Slot {
  /** the text whose tokens the session holds */
  liveText = '';
  /** the cache scope whose request left that state */
  scope?: string;
  /** where the last turn's assistant answer starts (the checkpoint the next turn resumes from) */
  lastTurnStart = 0;
  /** ...and its length in characters of the live text */
  lastTurnStartChars = 0;
  busy = false;
  /** when it last finished a request (idle slots equally matched: the least recently used is reused) */
  lastUsed = 0;
  /** the slot's drafter (speculative decoding): its index follows the session's context */
  drafts?: DraftOptions;
  constructor(readonly index: number, readonly session: Session) {}

  /** Chars of the live text that are a byte prefix of `prompt`. */
  liveMatch(prompt: string): number {
    let live = 0;
    while (live < this.liveText.length && live < prompt.length && this.liveText.charCodeAt(live) === prompt.charCodeAt(live)) live++;
    return live;
  }
}

/** Live sessions shorter than this are not worth keeping in the RAM cache. */
const RAM_MIN_TOKENS = 64;

export class Coordinator {
  private readonly slots: Slot[];
  /** requests waiting for a free slot, in arrival order */
  private waiters: { prompt: string; scope?: string; take: (s: Slot) => void }[] = [];
  readonly exec: ModelExecutor;
  /** requests admitted and not finished (the running ones included) */
  private pending = 0;
  private usage = new WeakMap<object, TurnResult>();
  readonly stats = { ramSaves: 0, ramLoads: 0, requests: 0, prefilled: 0, reused: 0, diskLoads: 0, diskSaves: 0, refused: 0, timeouts: 0, generated: 0, prefillMs: 0, decodeMs: 0, draftSteps: 0, drafted: 0, accepted: 0 };
  readonly engine: Engine;
  private readonly tracePath?: string;
  private readonly disk?: DiskPolicy;
  private readonly scopedDisks = new Map<string, DiskCache>();
  private readonly tools?: ToolMemory;
  private readonly log: (msg: string) => void;

  constructor(readonly o: CoordinatorOptions) {
    this.engine = o.engine;
    this.tracePath = o.trace;
    this.disk = o.disk;
    this.tools = o.tools;
    this.log = o.log ?? (() => {});
    const n = o.slots ?? 1;
    if (!(Number.isInteger(n) && n >= 1)) throw new RangeError(`slots must be a positive integer (got ${n})`);
    this.slots = [];
    try {
      for (let i = 0; i < n; i++) this.slots.push(new Slot(i, o.engine.newSession()));
    } catch (e) {
      for (const s of this.slots) s.session.dispose();
      throw new Error(`cannot hold ${n} live sessions of ctx ${o.engine.options.ctx}: ${(e as Error).message} (lower --ctx or --batched-session)`);
    }
    // each slot's drafter follows its session from the first prompt on (an MTP head fills its cache)
    const d = o.draft;
    try {
      if (d) for (const slot of this.slots) slot.drafts = d.drafter ? { drafter: d.drafter(), max: d.max } : draftOptions(d, { engine: o.engine, session: slot.session });
    } catch (e) {
      for (const slot of this.slots) slot.session.dispose();
      throw e;
    }
    this.exec = new ModelExecutor(o.engine, o.executor);
  }

  /** Tokens the model evaluated over all slots, rewinds' re-evaluations included (what prefills really cost). */
  get evaluated(): number {
    return this.slots.reduce((a, s) => a + s.session.evaluated, 0);
  }

  /** Requests waiting for a slot (not counting the running ones). */
  get waiting(): number {
    return Math.max(0, this.pending - this.slots.length);
  }

  /** Live sessions served at once. */
  get slotCount(): number {
    return this.slots.length;
  }

  /** Slots serving a request now. */
  get busySlots(): number {
    return this.slots.filter((s) => s.busy).length;
  }

  /**
   * Refuses a request when the queue is full. Called by an adapter before it opens a stream (the
   * refusal must be a 503, not an in-stream error); run() itself admits too.
   */
  admit(): void {
    const max = this.o.maxQueue ?? Infinity;
    if (this.pending >= this.slots.length + max) {
      this.stats.refused++;
      throw new ApiError('overloaded', `the server is busy: ${this.waiting} requests are already waiting (--max-queue ${max}); retry later`);
    }
  }

  /** Usage of the turn that served an HTTP request (for the request log). */
  usageOf(origin: object): TurnResult | undefined {
    return this.usage.get(origin);
  }

  /** Saves a slot's session to the disk cache under `text` (the text of its tokens). */
  private saveDisk(slot: Slot, reason: SaveReason, text: string): void {
    if (!this.disk) return;
    const s = slot.session;
    try {
      this.diskFor(slot.scope)!.save({ reason, text, payload: s.savePayload(), tokens: s.tokens.length, ctx: this.engine.options.ctx, tools: this.tools?.within(text) });
      this.stats.diskSaves++;
      this.trace('disk-save', { slot: slot.index, reason, tokens: s.tokens.length });
    } catch (e) {
      this.log(`kv-disk: could not save a ${reason} checkpoint: ${(e as Error).message}`);
      this.trace('disk-error', { slot: slot.index, reason, error: (e as Error).message });
    }
  }

  /**
   * The disk cache of a scope: the shared one, or a folder of its own inside it (scope-HASH), so a
   * lookup never sees another scope's files.
   */
  private diskFor(scope: string | undefined): DiskCache | undefined {
    if (!this.disk || scope === undefined) return this.disk?.cache;
    let c = this.scopedDisks.get(scope);
    if (!c) {
      c = new DiskCache({ ...this.disk.cache.o, dir: path.join(this.disk.cache.o.dir, `scope-${scope}`) });
      this.scopedDisks.set(scope, c);
    }
    return c;
  }

  /**
   * Clean shutdown: every slot's live state goes to disk (after the running steps end), under the
   * text of exactly the tokens it holds: mid-answer that is the prompt and the answer so far, so
   * the same request after a restart does not take it for its own prompt (it used to be saved
   * under the prompt alone, and the retried request continued the partial answer).
   */
  async saveLive(reason: SaveReason = 'shutdown'): Promise<void> {
    await this.exec.run(() => {
      for (const slot of this.slots) if (this.disk && slot.session.tokens.length >= this.disk.minTokens) this.saveDisk(slot, reason, this.engine.tokenizer.decode(slot.session.tokens));
    });
  }

  /**
   * Before an unrelated request replaces the live session, its conversation goes to the RAM
   * cache as of where its last answer started — the point its next turn resumes from (that turn
   * re-renders the answer without its think block). The rewind there is free: a checkpoint sits
   * exactly at that position.
   */
  private async keepInRam(slot: Slot, prompt: string): Promise<void> {
    const ram = this.o.ram, s = slot.session;
    if (!ram || s.tokens.length < RAM_MIN_TOKENS) return;
    const live = slot.liveMatch(prompt);
    // the same conversation goes on from (at least) where its last answer began: nothing to keep
    if (live >= Math.min(slot.lastTurnStartChars, slot.liveText.length)) return;
    const at = slot.lastTurnStart > 0 && slot.lastTurnStart <= s.tokens.length ? slot.lastTurnStart : s.tokens.length;
    try {
      if (at < s.tokens.length) await s.rewind(at);
      const text = this.engine.tokenizer.decode(s.tokens);
      ram.put(text, s.savePayload(), s.tokens.length, slot.scope);
      this.stats.ramSaves++;
      slot.liveText = text;
      this.trace('ram-save', { slot: slot.index, tokens: s.tokens.length, cachedBytes: ram.bytes });
    } catch (e) {
      this.log(`ram cache: could not keep the live session: ${(e as Error).message}`);
    }
  }

  /**
   * A slot taken by a request of another scope: its state is kept for its own scope (RAM, disk)
   * and the session starts empty, so nothing of it is reused (or counted as cached) for the new one.
   */
  private async changeScope(slot: Slot, scope: string | undefined): Promise<void> {
    const s = slot.session;
    await this.keepInRam(slot, '');
    if (this.disk && s.tokens.length >= this.disk.minTokens) this.saveDisk(slot, 'evict', slot.liveText);
    await s.rewind(0);
    slot.liveText = '';
    slot.lastTurnStart = 0;
    slot.lastTurnStartChars = 0;
    slot.scope = scope;
    this.trace('scope', { slot: slot.index });
  }

  /** A RAM entry that is a longer byte prefix of the prompt than the live session replaces it. */
  private restoreFromRam(slot: Slot, prompt: string): boolean {
    const ram = this.o.ram;
    if (!ram) return false;
    const entry = ram.lookup(prompt, slot.liveMatch(prompt) + 1, slot.scope);
    if (!entry) return false;
    try {
      slot.session.loadPayload(entry.payload);
    } catch (e) {
      this.log(`ram cache: entry skipped: ${(e as Error).message}`);
      return false;
    }
    slot.liveText = entry.text;
    this.stats.ramLoads++;
    this.trace('ram-load', { slot: slot.index, tokens: entry.tokens });
    return true;
  }

  /**
   * A disk file whose text is a longer byte prefix of the prompt than the live session replaces
   * it; a live session the prompt does not continue is persisted before it is reused.
   */
  private restoreFromDisk(slot: Slot, prompt: string): void {
    if (!this.disk) return;
    const live = slot.liveMatch(prompt);
    const disk = this.diskFor(slot.scope)!;
    const entry = disk.lookup(prompt, live + 1);
    const liveIsPrefix = live === slot.liveText.length;
    if (!entry && !liveIsPrefix && slot.session.tokens.length >= this.disk.minTokens && live < slot.liveText.length / 2) this.saveDisk(slot, 'evict', slot.liveText);
    if (!entry) return;
    const f = disk.load(entry.file);
    if (!f) return;
    if (!liveIsPrefix && slot.session.tokens.length >= this.disk.minTokens) this.saveDisk(slot, 'evict', slot.liveText);
    try {
      slot.session.loadPayload(f.payload);
    } catch (e) {
      // the file stays on disk (another server with other settings may use it); this one skips it
      disk.skip(entry.file, (e as Error).message);
      this.trace('disk-error', { file: entry.file, error: (e as Error).message });
      return;
    }
    for (const [id, block] of f.tools) this.tools?.remember([id], { reasoning: '', content: block });
    slot.liveText = f.text;
    this.stats.diskLoads++;
    this.trace('disk-load', { slot: slot.index, file: entry.file, tokens: f.header.tokens });
  }

  trace(event: string, data: Record<string, unknown>): void {
    if (!this.tracePath) return;
    try { fs.appendFileSync(this.tracePath, JSON.stringify({ t: new Date().toISOString(), event, ...data }) + '\n'); } catch { /* tracing never breaks serving */ }
  }

  /**
   * The idle slot for a prompt: the longest byte prefix of it in live text, then the empty or
   * least recently used one (its contents are the least likely to be continued).
   */
  private bestSlot(prompt: string, scope: string | undefined): Slot | undefined {
    let best: Slot | undefined, bestMatch = -1;
    for (const s of this.slots) {
      if (s.busy) continue;
      const m = s.liveText.length && s.scope === scope ? s.liveMatch(prompt) : 0;
      if (m > bestMatch || (m === bestMatch && best && s.lastUsed < best.lastUsed)) { best = s; bestMatch = m; }
    }
    return best;
  }

  /** A free slot for the request: at once, or when a running request ends (arrival order). */
  private acquire(prompt: string, scope: string | undefined, signal: AbortSignal): Promise<Slot> {
    const free = this.waiters.length === 0 ? this.bestSlot(prompt, scope) : undefined;
    if (free) { free.busy = true; return Promise.resolve(free); }
    return new Promise<Slot>((resolve, reject) => {
      const w = { prompt, scope, take: (s: Slot) => { signal.removeEventListener('abort', onAbort); resolve(s); } };
      const onAbort = () => { this.waiters = this.waiters.filter((x) => x !== w); reject(new AbortError()); };
      signal.addEventListener('abort', onAbort, { once: true });
      this.waiters.push(w);
    });
  }

  private release(slot: Slot): void {
    slot.busy = false;
    slot.lastUsed = performance.now();
    const w = this.waiters.shift();
    if (!w) return;
    const s = this.bestSlot(w.prompt, w.scope)!;
    s.busy = true;
    w.take(s);
  }

  run(req: TurnRequest): Promise<TurnResult> {
    try { this.admit(); } catch (e) { return Promise.reject(e); }
    this.pending++;
    const ms = this.o.requestTimeoutMs ?? 0;
    const timer = ms > 0 ? AbortSignal.timeout(ms) : undefined;
    const r = timer ? { ...req, signal: AbortSignal.any([req.signal, timer]) } : req;
    const job = this.acquire(req.prompt, req.scope, r.signal).catch((e) => {
      if (timer?.aborted) { this.stats.timeouts++; throw new ApiError('timeout', `the request waited longer than its time limit (${ms / 1000} s) for the model`); }
      throw e;
    }).then(async (slot) => {
      try { return await this.turn(slot, r); } finally { this.release(slot); }
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
    return job;
  }

  /** Tokens for the prompt, reusing the live session's tokens when its text is a byte prefix. */
  private promptTokens(slot: Slot, prompt: string, encoded?: number[]): number[] {
    const tok = this.engine.tokenizer;
    const direct = encoded ?? tok.encode(prompt);
    const live = slot.session.tokens;
    const byToken = slot.session.commonPrefix(direct);
    const after = byToken < live.length && slot.liveText ? tok.encodeAfter({ tokens: live, text: slot.liveText }, prompt) : undefined;
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

  private async turn(slot: Slot, req: TurnRequest): Promise<TurnResult> {
    try {
      return await this.turnOn(slot, req);
    } catch (e) {
      // a failed batched step empties its sessions (batch.ts): the live text follows
      if (slot.session.tokens.length === 0) slot.liveText = '';
      throw e;
    }
  }

  private async turnOn(slot: Slot, req: TurnRequest): Promise<TurnResult> {
    this.stats.requests++;
    const e = this.engine, tok = e.tokenizer, s = slot.session, x = this.exec;
    if (req.signal.aborted) throw new AbortError();
    // what may move the slot's state (RAM/disk caches) runs as one turn at the model
    const tokens = await x.run(async () => {
      if (slot.scope !== req.scope) await this.changeScope(slot, req.scope);
      await this.keepInRam(slot, req.prompt);
      if (!this.restoreFromRam(slot, req.prompt)) this.restoreFromDisk(slot, req.prompt);
      return this.promptTokens(slot, req.prompt, req.tokens);
    });
    if (tokens.length + 1 > e.options.ctx) throw Object.assign(new Error(`prompt of ${tokens.length} tokens does not fit the context of ${e.options.ctx}`), { code: 'context_length_exceeded' });
    this.trace('request', { slot: slot.index, promptTokens: tokens.length, prompt: req.prompt });
    // Split points of the prefill: disk saves (cold, continued) and a checkpoint where the
    // assistant turn starts (the next request renders this turn's history without the think block,
    // so it diverges exactly there and can resume without re-prefilling).
    const common = s.commonPrefix(tokens);
    const actions = new Map<number, () => void>();
    const cut = this.turnStart(tokens);
    // also where the reused prefix ends exactly there (a restored RAM entry, a retried request):
    // a payload load leaves no snapshot, and without one the next side request's keepInRam
    // rewind re-evaluated the whole conversation from token 0
    if (cut > 0 && cut >= common && cut < tokens.length) actions.set(cut, () => s.checkpoint());
    slot.lastTurnStart = cut;
    slot.lastTurnStartChars = cut > 0 ? tok.decode(tokens.slice(0, cut)).length : req.prompt.length;
    const d = this.disk;
    if (d) {
      const text = (n: number) => tok.decode(tokens.slice(0, n));
      const cold = Math.floor((tokens.length - d.trimTokens) / d.alignTokens) * d.alignTokens;
      if (common < d.minTokens && tokens.length <= d.coldMaxTokens && cold >= d.minTokens && cold > common) {
        const prev = actions.get(cold);
        actions.set(cold, () => { prev?.(); this.saveDisk(slot, 'cold', text(cold)); });
      }
      for (let f = (Math.floor(common / d.continuedIntervalTokens) + 1) * d.continuedIntervalTokens; f < tokens.length; f += d.continuedIntervalTokens) {
        const prev = actions.get(f);
        actions.set(f, () => { prev?.(); this.saveDisk(slot, 'continued', text(f)); });
      }
    }
    let reused = 0, evaluated = 0, first = true;
    const tPrefill = performance.now(), ev0 = s.evaluated;
    try {
      for (const point of [...[...actions.keys()].sort((a, b) => a - b), tokens.length]) {
        if (first) {
          ({ reused, evaluated } = await x.sync(s, tokens.slice(0, point), { signal: req.signal, progress: req.onProgress }));
          first = false;
        } else {
          await x.prefill(s, tokens.slice(s.tokens.length, point), { signal: req.signal, progress: req.onProgress });
          evaluated = point - reused;
        }
        const act = actions.get(point);
        if (act) await x.run(act);
      }
    } catch (err) {
      if (!(err instanceof AbortError)) throw err;
      // cancelled during the prefill: the session keeps what was evaluated, nothing is generated
      slot.liveText = tok.decode(s.tokens);
      this.trace('cancelled', { slot: slot.index, during: 'prefill', tokens: s.tokens.length });
      return { parsed: { reasoning: '', content: '', toolCalls: [] }, rawText: '', promptTokens: tokens.length, cachedTokens: reused, completionTokens: 0, reasoningTokens: 0, finish: 'abort' };
    }
    this.stats.reused += reused;
    this.stats.prefilled += evaluated;
    // what the model really evaluated (a rewind to an older snapshot re-evaluates its gap)
    this.trace('prefill', { slot: slot.index, reused, evaluated: s.evaluated - ev0 });
    this.stats.prefillMs += performance.now() - tPrefill;
    const tDecode = performance.now();
    slot.liveText = req.prompt;
    if (req.sampling.seed !== undefined) s.seed(req.sampling.seed);

    let fed = ''; // text of the tokens that entered the session (the live text must match them)
    const start = s.tokens.length, every0 = this.disk?.continuedIntervalTokens ?? 1;
    let fedTokens = 0, nextSave = (Math.floor(start / every0) + 1) * every0;
    let ans: Answer;
    x.beginDecode(s);
    try {
      ans = await decodeAnswer(s, tok, {
        maxTokens: Math.min(req.maxTokens, e.options.ctx - s.tokens.length), sampling: req.sampling, greedyProtocol: true,
        signal: req.signal, raw: req.raw, startInReasoning: req.startInReasoning, tools: req.tools, stop: req.stop,
        thinkingBudget: req.thinkingBudget, forceToolCall: req.forceToolCall, grammar: req.grammar, logprobs: req.logprobs, onLogprob: req.onLogprob, onEvent: req.onEvent,
        // decode steps are shared with the other slots' (executor.ts)
        feedToken: (id, mask) => x.decode(s, id, req.signal, mask),
        // a draft step is one turn at the model: its rows, the walk over them, the kept ones
        draft: this.draftOptions(slot, x),
        onFed: async (text) => {
          fed = text;
          fedTokens++;
          // a continued save every interval of tokens, when the text that entered is the whole of
          // the session (a draft step's accepted tokens enter together: the save waits for the last)
          const at = start + fedTokens, every = this.disk?.continuedIntervalTokens;
          if (every && at >= nextSave && at === s.tokens.length) {
            while (nextSave <= at) nextSave += every;
            await x.run(() => this.saveDisk(slot, 'continued', req.prompt + fed));
          }
        },
        trace: (event, data) => this.trace(event, data),
      });
    } finally {
      x.endDecode(s);
      slot.liveText = req.prompt + fed;
    }
    const n = ans.tokens.length;
    if (req.checkpointEnd && ans.stop !== 'abort') await x.run(() => s.checkpoint());
    this.stats.generated += n;
    this.stats.decodeMs += performance.now() - tDecode;
    const { parsed, raw, finish, stopSequence, reasoningTokens, logprobs } = ans;
    this.trace('generated', { slot: slot.index, tokens: n, finish, text: raw });
    return {
      parsed, rawText: raw, promptTokens: tokens.length, cachedTokens: reused, completionTokens: n, reasoningTokens, finish, stopSequence, ...(req.logprobs !== undefined ? { logprobs } : {}),
      ...(req.checkpointEnd ? { live: { tokens: s.tokens.slice(), text: slot.liveText } } : {}),
    };
  }

  /** The slot's draft options for a turn, verified as one executor turn while it is the only one generating. */
  private draftOptions(slot: Slot, x: ModelExecutor): DraftOptions | undefined {
    const d = this.o.draft;
    if (!d) return undefined;
    const s = slot.session;
    return {
      ...slot.drafts!,
      enabled: () => x.decodingCount <= 1,
      verify: (tokens, decide) => x.run(async () => { const g = await s.evalDraft(tokens); await s.keepDraft(decide(g)); }),
      onStep: (proposed, accepted) => { this.stats.draftSteps++; this.stats.drafted += proposed; this.stats.accepted += accepted; },
    };
  }

  dispose(): void {
    for (const slot of this.slots) slot.session.dispose();
  }
}
