/**
 * The engine-wide scratch buffers of a step, as one table: the memory budget (checkBudget) sums
 * it and the allocator creates exactly these buffers, so the two cannot disagree.
 * Sizes are f32 words for `T`-token steps at context `ctx`.
 */
import type { ModelShape } from '../../model/shape.js';
import { stateSizes } from '../payload.js';
import { attnDecodedLayout } from './attn-decoded.js';
import { DELTANET_BLOCK, DELTANET_BLOCK_FLOATS, TOPK_ITEMS, TOPK_MAX, attnSlots, attnTokens, moeMaxTiles } from './graph.js';

/** The scratch table's buffer names (a name used anywhere else is a compile error, not a run-time one). */
export const SCRATCH_NAMES = ['CKC', 'CKS', 'XIN', 'X', 'A', 'A2', 'QG', 'Kb', 'Vb', 'U', 'Z', 'B', 'AL', 'O', 'P', 'ML', 'R', 'IDS', 'WTS', 'LIST', 'TILES', 'CNT', 'GE', 'UE', 'DE', 'GS', 'US', 'DS', 'SG', 'STK', 'XQ', 'XS', 'XQE', 'XSE', 'LOGITS', 'STT', 'PIN', 'PARAMS', 'ARG', 'MASK', 'TKA', 'TKB', 'TKH', 'M', 'DBK', 'WIN', 'QD', 'KD', 'VD'] as const;
export type ScratchName = (typeof SCRATCH_NAMES)[number];
/** The engine's own buffers beside the scratch table: the IQ2 grid, the RoPE table, steering directions. */
export type EngineBufferName = ScratchName | 'GRID' | 'ROPE' | 'STEER';
/** Buffer ids by name (VkEngine.buf). */
export type EngineBuffers = Record<EngineBufferName, number>;

export interface ScratchBuffer {
  name: ScratchName;
  floats: number;
  /** host-visible (written or read by the host in place) */
  host?: boolean;
}

export interface ScratchOptions {
  T: number; ctx: number; logitsRows: number; steering: boolean; unified: boolean;
  /** rows of a batched decode step (1: none) and the words of one row's step parameters (PIN/PARAMS) */
  batch?: number; paramWords?: number;
  /** drafted tokens a draft step may verify (its state checkpoints: CKC, CKS) */
  drafts?: number;
  /** SSD streaming: the host rewrites IDS, LIST and TILES between step segments (host-visible, no copies) */
  streaming?: boolean;
  /**
   * Floats of one input row in embedding widths: 1 (token embeddings), 2 (an MTP head's
   * [normed embedding | normed hidden state], projected to the residual stream by the step)
   */
  inputWidth?: number;
  /** prefill attention on the matrix units (attn-decoded.ts attnOnMatrixUnits): its decoded operands */
  matrixAttn?: boolean;
}

export function scratchTable(s: ModelShape, o: ScratchOptions): ScratchBuffer[] {
  const nRec = o.drafts ? s.recurrent.filter(Boolean).length : 0;
  const { T, ctx } = o, st = stateSizes(s), K = s.nExpertUsed, batch = o.batch ?? 1, params = Math.max(4, batch * (o.paramWords ?? 4));
  // rows of a decode (1) or batched decode step: the int8 levels' rows
  const levelRows = Math.max(1, batch);
  const inW = o.inputWidth ?? 1;
  // the decode output of every stack (weights.ts STACKS): the largest of their row totals
  const stackRows = Math.max(st.convCh + s.ssmInner + 2 * s.ssmVHeads, 2 * s.nHead * s.headDim + 2 * st.kvDim, s.nExpert + 1);
  const dec = o.matrixAttn && T > 1 ? attnDecodedLayout({ nHead: s.nHead, nHeadKv: s.nHeadKv, hd: s.headDim, tokens: Math.min(T, attnTokens(T, true)), ctx }) : undefined;
  return [
    // host-written step inputs land in small host-visible buffers; step_in.comp copies them to
    // device-local X and PARAMS
    { name: 'XIN', floats: T * inW * s.nEmbd, host: true },
    // an MTP head's wide input rows, copied device-local before its input projection (none elsewhere)
    { name: 'WIN', floats: inW > 1 ? T * inW * s.nEmbd : 0 },
    { name: 'X', floats: T * s.nEmbd }, { name: 'A', floats: T * s.nEmbd }, { name: 'A2', floats: T * s.nEmbd },
    { name: 'QG', floats: T * 2 * s.nHead * s.headDim }, { name: 'Kb', floats: T * st.kvDim }, { name: 'Vb', floats: T * st.kvDim },
    { name: 'U', floats: T * st.convCh },
    // deltanet_prep's record of each 16-token block and value head for deltanet_chunk
    { name: 'DBK', floats: Math.ceil(T / DELTANET_BLOCK) * s.ssmVHeads * DELTANET_BLOCK_FLOATS }, { name: 'Z', floats: T * s.ssmInner }, { name: 'B', floats: T * s.ssmVHeads }, { name: 'AL', floats: T * s.ssmVHeads },
    { name: 'O', floats: T * Math.max(s.nHead * s.headDim, s.ssmInner) },
    // attn_flash's per-block partial sums and (max, sum) pairs
    { name: 'P', floats: attnSlots(s, T, ctx, batch, o.matrixAttn) * s.headDim }, { name: 'ML', floats: attnSlots(s, T, ctx, batch, o.matrixAttn) * 2 },
    // attn_mmc's operands decoded once (attn_decode.comp): a dispatch pair's Q, the caches' K and V
    // up to the context (~100 MB at 32K keys of the full model)
    { name: 'QD', floats: (dec?.qBytes ?? 0) / 4 }, { name: 'KD', floats: (dec?.kBytes ?? 0) / 4 }, { name: 'VD', floats: (dec?.vBytes ?? 0) / 4 },
    { name: 'R', floats: T * s.nExpert }, { name: 'IDS', floats: T * K, host: o.streaming }, { name: 'WTS', floats: T * K },
    // the pairs grouped by expert and their tiles (moe_tiles.comp), for multi-token steps
    { name: 'LIST', floats: T * K, host: o.streaming }, { name: 'TILES', floats: 4 * (1 + moeMaxTiles(T * K, s.nExpert)), host: o.streaming },
    // the workgroup counters of matvec epilogues, one per activation row (each resets its own when done)
    { name: 'CNT', floats: levelRows },
    { name: 'GE', floats: T * K * s.nFfExp }, { name: 'UE', floats: T * K * s.nFfExp }, { name: 'DE', floats: T * K * s.nEmbd },
    { name: 'GS', floats: T * s.nFfShexp }, { name: 'US', floats: T * s.nFfShexp }, { name: 'DS', floats: T * s.nEmbd }, { name: 'SG', floats: T },
    { name: 'STK', floats: stackRows },
    // a decode or batched step's normed rows as int8 levels for mvq.comp (rmsnorm quant): three
    // bytes a value, and three scales (a vec4) per 32 values
    { name: 'XQ', floats: levelRows * 3 * s.nEmbd / 4 }, { name: 'XS', floats: levelRows * s.nEmbd / 8 },
    // and the routed experts' SwiGLU outputs (quant.comp), the down projections' input
    { name: 'XQE', floats: levelRows * K * 3 * s.nFfExp / 4 }, { name: 'XSE', floats: levelRows * K * s.nFfExp / 8 },
    // host-visible only where that memory is the device's own (unified): on a discrete GPU the
    // output matvec would write it across PCIe every step, and most steps never read it
    { name: 'LOGITS', floats: o.logitsRows * s.nVocab, host: o.unified },
    // one layer's DeltaNet state in the payload's layout (state_t.comp): snapshots copy it
    { name: 'STT', floats: st.ssmBytes / 4, host: true },
    // step parameters and arg-max results: one row per session of a batched step
    { name: 'PIN', floats: params, host: true }, { name: 'PARAMS', floats: params }, { name: 'ARG', floats: 2 * batch, host: true },
    // a grammar's token mask for the arg-max (argmax.comp): a flag word, then a bit per token
    { name: 'MASK', floats: 1 + Math.ceil(s.nVocab / 32), host: true },
    // top-k stages (topk.comp): ping-pong pairs, the last stage's k pairs host-visible
    { name: 'TKA', floats: 2 * Math.ceil(s.nVocab / TOPK_ITEMS) * TOPK_MAX }, { name: 'TKB', floats: 2 * Math.ceil(s.nVocab / TOPK_ITEMS) * TOPK_MAX },
    { name: 'TKH', floats: 2 * TOPK_MAX, host: true },
    ...(o.steering ? [{ name: 'M' as const, floats: T * s.nEmbd }] : []),
    // a draft step's conv histories and DeltaNet states after each row but its last, every
    // recurrent layer (draftCheckpoints): the session returns to its last accepted row's
    { name: 'CKC', floats: (o.drafts ?? 0) * nRec * convCheckpoint(s) }, { name: 'CKS', floats: (o.drafts ?? 0) * nRec * st.ssmBytes / 4 },
  ];
}

/** Floats of one conv-history checkpoint (ssm_conv.comp: rounded up to 64, so views of rows stay 256-byte aligned). */
export function convCheckpoint(s: ModelShape): number {
  return Math.ceil(stateSizes(s).convBytes / 4 / 64) * 64;
}

export function scratchBytes(t: ScratchBuffer[]): number {
  return t.reduce((a, b) => a + 4 * Math.max(1, b.floats), 0);
}
