/**
 * The engine-wide output buffers of a step — LOGITS, ARG (arg-max and flags), TKH (top-k pairs),
 * MASK (a grammar's tokens for the arg-max) — and who owns them. A step leaves its last row there
 * for the session that ran it (deferLast: greedy decoding reads only ARG); the next step of
 * another session overwrites them, so the owner saves its row first (OutputOwner.keep). Also the
 * on-demand passes over a row that is still there: the top-k stages and a masked arg-max.
 */
import { MAX_BATCH_ROWS } from '../defaults.js';
import type { TokenMask } from '../types.js';
import type { VkDevice } from '../../vk/addon.js';
import { OpList, TOPK_ITEMS, type Pipelines } from './graph.js';
import { KERNELS as K, dispatch, groups } from './kernels.js';
import type { EngineBuffers } from './scratch.js';

/** A session that can save its deferred logits row before another session overwrites it. */
export interface OutputOwner { keep(): void }

export class EngineOutputs {
  /** the sessions whose last logits row is still only in LOGITS/ARG (forward deferLast, a batched step) */
  private deferred = new Set<OutputOwner>();
  /** recorded top-k commands by k and row */
  private topkCmds = new Map<number, number>();
  private argmaxCmd: number | undefined;
  private maskOn: TokenMask | undefined;

  constructor(private readonly o: { dev: VkDevice; pipes: Pipelines; buf: Readonly<EngineBuffers>; nVocab: number }) {}

  /** `s` is about to overwrite the outputs (the previous owner saves its deferred row first); `defer`: s leaves its last row there. */
  claim(s: OutputOwner, defer: boolean): void {
    for (const x of this.deferred) if (x !== s) x.keep();
    this.deferred = new Set(defer ? [s] : []);
  }

  /** A batched step is about to overwrite them: every owner but its rows saves its row; the rows own them after. */
  claimFor(rows: OutputOwner[]): void {
    for (const x of this.deferred) if (!rows.includes(x)) x.keep();
    this.deferred = new Set(rows);
  }

  /** whether s still owns the outputs (its deferred row is on the device) */
  owns(s: OutputOwner): boolean {
    return this.deferred.has(s);
  }

  /** s is gone: it owns nothing */
  release(s: OutputOwner): void {
    this.deferred.delete(s);
  }

  /** The grammar mask the next step's arg-max applies to its row 0 (argmax.comp), or none; written only when it changes. */
  setMask(mask: TokenMask | undefined): void {
    if (mask === this.maskOn) return;
    const { dev, buf } = this.o;
    if (mask) {
      const words = new Uint32Array(1 + mask.bits.length);
      words[0] = 1;
      words.set(mask.bits, 1);
      dev.write(buf.MASK, 0, new Uint8Array(words.buffer));
    } else dev.write(buf.MASK, 0, new Uint8Array(4));
    this.maskOn = mask;
  }

  /**
   * The k best (logit, id) pairs of LOGITS row `row` (0: the deferred decode row), best first,
   * ties to the lower id: topk.comp stages, recorded once per k and row, run on demand (only
   * sampling with a temperature needs them). k ≤ TOPK_MAX.
   */
  topK(k: number, row = 0): Uint32Array {
    const key = k * MAX_BATCH_ROWS + row;
    let cmd = this.topkCmds.get(key);
    if (cmd === undefined) {
      const ops = new OpList(this.o.pipes);
      recordTopK(ops, this.o.buf, this.o.nVocab, k, row);
      cmd = this.o.dev.record(ops.build());
      this.topkCmds.set(key, cmd);
    }
    this.o.dev.runSync(cmd);
    return this.readTopK(k);
  }

  /** The last top-k's k pairs (topK(), or the stages a decode step ran: step.ts recordStep's topK). */
  readTopK(k: number): Uint32Array {
    return new Uint32Array(this.o.dev.read(this.o.buf.TKH, 0, 8 * k));
  }

  /**
   * The arg-max of LOGITS row 0 again, under `mask`, into ARG row 0 (a step that ran without the
   * grammar's mask: it was not known yet). One submission; no row read.
   */
  argmaxMasked(mask: TokenMask): void {
    if (this.argmaxCmd === undefined) {
      const ops = new OpList(this.o.pipes);
      recordArgmax(ops, this.o.buf, this.o.nVocab, 1, 0);
      this.argmaxCmd = this.o.dev.record(ops.build());
    }
    this.setMask(mask);
    this.o.dev.runSync(this.argmaxCmd);
  }
}

/**
 * The arg-max stages (argmax.comp) over `rows` LOGITS rows from float `offset`, into ARG rows
 * 0…; row 0 under MASK when its flag is set.
 */
export function recordArgmax(ops: OpList, B: Readonly<EngineBuffers>, nVocab: number, rows: number, offset: number): void {
  const g = groups(K.argmax, nVocab), bind = { LOGITS: B.LOGITS, TKA: B.TKA, TKB: B.TKB, ARG: B.ARG, MASK: B.MASK };
  dispatch(ops, K.argmax, bind, { n: nVocab, offset, stage: 0, groups: g }, [g, rows]);
  dispatch(ops, K.argmax, bind, { n: nVocab, offset: 0, stage: 1, groups: g }, [1, rows]);
}

/**
 * The top-k stages (topk.comp) over LOGITS row `row`: exact k best (logit, id) pairs, best first,
 * ties to the lower id, ending in TKH. TKA/TKB are the stages' ping-pong buffers (free after the
 * arg-max, which uses them too). k ≤ TOPK_MAX.
 */
export function recordTopK(ops: OpList, B: Readonly<EngineBuffers>, nVocab: number, k: number, row: number): void {
  let n = nVocab, stage = 0, src = B.TKB, dst = B.TKA;
  for (;;) {
    const groups = Math.ceil(n / TOPK_ITEMS);
    const out = groups === 1 ? B.TKH : dst;
    dispatch(ops, K.topk, { LOGITS: B.LOGITS, src, dst: out }, { n, k, offset: stage === 0 ? row * nVocab : 0, stage }, [groups]);
    if (groups === 1) break;
    n = groups * k;
    stage++;
    [src, dst] = [dst, src];
  }
}
