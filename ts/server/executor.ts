/**
 * The one owner of model execution when several sessions are live (q36-server --batched-session):
 * every model call of every slot goes through here, one at a time, so no two steps overlap on
 * the engine's shared buffers. Decode tokens of different sessions coalesce — for up to
 * `coalesceMs`, or until every decoding session has its token in — and advance in one batched
 * step (ts/engine/batch.ts: native on Vulkan, the ordered fallback elsewhere). Prefills run in
 * bounded quanta (2048 tokens while nothing decodes, 128 while anything does) interleaved in
 * arrival order with everything else, so one long prompt does not stall every decoder.
 */
import { AbortError, syncKeep } from '../engine/common.js';
import { evalBatch } from '../engine/batch.js';
import { MAX_BATCH_ROWS } from '../engine/defaults.js';
import type { Engine, EvalOptions, Session, TokenMask } from '../engine/types.js';

export interface ExecutorOptions {
  /** how long decode-ready sessions wait for the others to join a step (ms) */
  coalesceMs?: number;
  /** prefill tokens per turn while no session decodes / while any does */
  quantumIdle?: number;
  quantumBusy?: number;
}

export const DEFAULT_EXECUTOR = { coalesceMs: 2, quantumIdle: 2048, quantumBusy: 128 };

type Job =
  | { kind: 'run'; fn: () => unknown; resolve: (v: unknown) => void; reject: (e: unknown) => void }
  | { kind: 'decode'; s: Session; token: number; mask?: TokenMask; at: number; resolve: (v: unknown) => void; reject: (e: unknown) => void };

export class ModelExecutor {
  private jobs: Job[] = [];
  private running = false;
  private decoding = new Set<Session>();
  private wake?: () => void;
  private readonly o: typeof DEFAULT_EXECUTOR;
  /** batched steps run and the rows they held (for /metrics and tests) */
  readonly stats = { steps: 0, rows: 0, largest: 0 };

  constructor(private readonly engine: Engine, o: ExecutorOptions = {}) {
    this.o = { ...DEFAULT_EXECUTOR, ...o };
  }

  /** Exclusive model access for fn (a prefill quantum, a snapshot, a payload moving in or out). */
  run<T>(fn: () => T | Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => this.push({ kind: 'run', fn, resolve: resolve as (v: unknown) => void, reject }));
  }

  /** s generates from now on: decode steps wait (briefly) for its token. */
  beginDecode(s: Session): void {
    this.decoding.add(s);
  }

  /** sessions generating now (speculative drafts are verified only while there is one) */
  get decodingCount(): number {
    return this.decoding.size;
  }

  endDecode(s: Session): void {
    this.decoding.delete(s);
    this.wake?.();
  }

  /** s takes `token` in the next decode step (shared with the other sessions' tokens). */
  decode(s: Session, token: number, signal?: AbortSignal, mask?: TokenMask): Promise<void> {
    if (signal?.aborted) return Promise.reject(new AbortError());
    return new Promise<void>((resolve, reject) => this.push({ kind: 'decode', s, token, mask, at: performance.now(), resolve: resolve as (v: unknown) => void, reject }));
  }

  /** Evaluates tokens into s in quanta, each its own turn at the model. */
  async prefill(s: Session, tokens: readonly number[], o: EvalOptions = {}): Promise<void> {
    let done = 0;
    while (done < tokens.length) {
      if (o.signal?.aborted) throw new AbortError();
      const q = this.decoding.size > 0 ? this.o.quantumBusy : this.o.quantumIdle;
      const part = tokens.slice(done, done + q), base = done;
      await this.run(() => s.eval(part, { signal: o.signal, continues: base + part.length < tokens.length, progress: (d) => o.progress?.(base + d, tokens.length) }));
      done += part.length;
    }
  }

  /** BaseSession.sync through the executor: the rewind as one turn, the rest as prefill quanta. */
  async sync(s: Session, tokens: readonly number[], o: EvalOptions = {}): Promise<{ reused: number; evaluated: number }> {
    const same = await this.run(async () => {
      const L = syncKeep(s.tokens, tokens);
      if (L === tokens.length) return true;
      if (L < s.tokens.length) await s.rewind(L);
      return false;
    });
    if (same) return { reused: tokens.length, evaluated: 0 };
    const reused = s.tokens.length;
    await this.prefill(s, tokens.slice(reused), o);
    return { reused, evaluated: tokens.length - reused };
  }

  private push(j: Job): void {
    this.jobs.push(j);
    this.wake?.();
    if (!this.running) void this.loop();
  }

  private async loop(): Promise<void> {
    this.running = true;
    try {
      while (this.jobs.length) {
        const head = this.jobs[0];
        if (head.kind === 'decode') await this.decodeStep(head.at);
        else {
          this.jobs.shift();
          try { head.resolve(await head.fn()); } catch (e) { head.reject(e); }
        }
        // the finished jobs' callers continue (sample, report, queue their next token) before
        // the next model call
        await new Promise<void>((r) => setImmediate(r));
      }
    } finally {
      this.running = false;
    }
  }

  /** Waits for the decoding sessions' tokens (up to coalesceMs after the first), then one step. */
  private async decodeStep(first: number): Promise<void> {
    const pending = () => this.jobs.filter((j) => j.kind === 'decode').length;
    for (;;) {
      const left = this.o.coalesceMs - (performance.now() - first);
      if (pending() >= Math.max(1, this.decoding.size) || left <= 0) break;
      await new Promise<void>((r) => { const t = setTimeout(r, left); this.wake = () => { clearTimeout(t); r(); }; });
      this.wake = undefined;
    }
    // one token per session, in arrival order; a native step takes up to batchRows of them
    const max = this.engine.batchRows > 1 ? this.engine.batchRows : MAX_BATCH_ROWS;
    const take: Extract<Job, { kind: 'decode' }>[] = [];
    const seen = new Set<Session>();
    for (const j of this.jobs) {
      if (j.kind !== 'decode' || seen.has(j.s) || take.length >= max) continue;
      take.push(j);
      seen.add(j.s);
    }
    this.jobs = this.jobs.filter((j) => !take.includes(j as never));
    try {
      await evalBatch(this.engine, take.map((j) => ({ session: j.s, token: j.token, mask: j.mask })));
      this.stats.steps++;
      this.stats.rows += take.length;
      this.stats.largest = Math.max(this.stats.largest, take.length);
      for (const j of take) j.resolve(undefined);
    } catch (e) {
      for (const j of take) j.reject(e);
    }
  }
}
