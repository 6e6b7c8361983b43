/**
 * One forward step on the Vulkan engine, op for op as core-as/engine/forward.ts: recorded once
 * per step shape (tokens per step, logits rows) and replayed for every step. One function per
 * layer kind; each producer returns the residual update it leaves pending, and the next norm
 * applies it (rmsnorm.comp's modes), so no add runs as a dispatch of its own.
 */
import { rowBytes } from '../../gguf/index.js';
import { KV_TYPE_IDS } from '../common.js';
import { stateSizes } from '../payload.js';
import type { KvType } from '../types.js';
import { attnDecodedLayout, dispatchAttnDecode } from './attn-decoded.js';
import { DELTANET_BLOCK, MV, OpList, moePairs, attnBlock, attnTileFits, attnTileTokens, attnTokens, moeMaxTiles } from './graph.js';
import type { MatvecOpts, VkHost } from './host.js';
import { KERNELS as K, ROW_KERNELS as KR, dispatch, groups } from './kernels.js';
import type { LayerTensorKey } from '../../model/schema.js';
import { INPUT_PROJ } from './weights.js';
import { recordArgmax, recordTopK } from './outputs.js';

/**
 * The residual update a producer leaves to the next norm: none (mode 0), X += R (mode 1: an
 * attention or DeltaNet output, or a steered MoE output), or X += the MoE combine of DE/WTS with
 * the shared expert DS gated by SG (mode 2).
 */
export interface Pending { mode: 0 | 1 | 2; r: number; sg: number }

/** A session's device state for one layer: conv and DeltaNet state, or the K and V caches. */
export interface LayerState { a: number; b: number }

/**
 * One session's row of a batched decode step: its layer states and its step parameters (a view of
 * PARAMS holding {pos, 1}). Everything that only multiplies weights runs over all rows at once;
 * what touches a session's own state (conv, recurrence, q/k prep, KV store, attention) runs as a
 * one-token step of each row, all rows in one dispatch (the _rows kernels: row r is token r of
 * the scratch buffers), so each row sees exactly what a decode step of its session alone sees.
 */
export interface BatchRow {
  layers: LayerState[];
  params: number;
}

export interface StepContext {
  h: VkHost;
  ops: OpList;
  /** tokens in the step (a batched step: one per row) */
  T: number;
  /** a batched decode step's rows (T of them): then `layers` is unused, but in a draft step */
  rows?: BatchRow[];
  /**
   * A draft step (speculative decoding): the rows are consecutive tokens of one session (`layers`,
   * every row's too). Each is computed as its own decode step is: the products and attention as
   * a batched step's rows, the conv and recurrence over the rows in order, keeping the state
   * after each row but the last (the host's draftCheckpoints) for the copy back to an accepted row.
   */
  draft?: boolean;
  layers: LayerState[];
  kvTypes: { k: KvType; v: KvType };
  /** the session's context length (KV rows) */
  ctx: number;
  /** words from one row's step parameters to the next (PIN/PARAMS) */
  paramWords: number;
  /** also the k best logits of the last row into TKH (a session sampling with top-k: no second submission) */
  topK?: number;
}

const none = (c: StepContext): Pending => ({ mode: 0, r: c.h.buf.A2, sg: c.h.buf.A2 });

/** A (or y) = rmsnorm(X after the pending update) · weight, for rows [row0, row0 + rows). */
function norm(c: StepContext, weight: number, p: Pending, row0: number, rows: number, quant = false, y = c.h.buf.A): void {
  const B = c.h.buf, s = c.h.shape;
  dispatch(c.ops, K.rmsnorm, { X: B.X, A: y, weight, R: p.r, DE: B.DE, WTS: B.WTS, DS: B.DS, SG: p.sg, XQ: B.XQ, XS: B.XS },
    { n: s.nEmbd, row0, eps: s.eps, mode: p.mode, K: s.nExpertUsed, quant: quant ? 1 : 0 }, [rows]);
}

/**
 * Whether the norms also write their rows as int8 levels (XQ/XS) for the products over them
 * (mvq.comp, mvq2/mvq4.comp: the projections, the shared and routed gate+up, the LM head): decode and
 * batched decode steps (rows fit XQ), where the device has packed integer dot products. Decode and
 * batched steps decide alike, so a batched row keeps its bits alone.
 */
const levelsOn = (c: StepContext): boolean => c.h.mvq && (c.T === 1 || !!c.rows) && c.h.shape.nEmbd % 32 === 0 && c.h.shape.nEmbd <= 4096;
/** The norm output's levels, where levelsOn (dense: a product of dense weights, mvqDense). */
const normLevels = (c: StepContext, dense = true) => (levelsOn(c) && (!dense || c.h.mvqDense) ? { q: c.h.buf.XQ, s: c.h.buf.XS } : undefined);

/** Layer weights by schema key (ts/model/schema.ts), or the fused gate+up pairs weights.ts makes. */
type WeightKey = LayerTensorKey | 'ffn_gate_up_exps.weight' | 'ffn_gate_up_shexp.weight';
const mv = (c: StepContext, l: number, n: WeightKey, x: number, y: number, rows: number, o?: MatvecOpts) => c.h.mv.matvec(c.ops, `blk.${l}.${n}`, x, y, rows, o);
const wbuf = (c: StepContext, l: number, n: LayerTensorKey) => c.h.w.buf(`blk.${l}.${n}`);

/** Gated DeltaNet: projections, causal conv, the recurrence (token or chunked), gated norm, out-projection into A2. */
function deltanetMixer(c: StepContext, l: number): Pending {
  const { h, T } = c, s = h.shape, B = h.buf, st = stateSizes(s);
  // one token: the four projections as one stacked matvec, outputs read through views
  const levels = normLevels(c);
  const v = T === 1 && !c.rows ? h.mv.stacked(c.ops, l, 'ssm_in', B.A, true, levels) : undefined;
  const [U, Z, Bt, AL] = v ?? [B.U, B.Z, B.B, B.AL];
  // a prefill chunk's recurrence walks its blocks on one workgroup a multiprocessor: the output
  // gate's projection (needed only by the gated norm after it) runs alongside that walk
  const chunked = T > 1 && !c.rows && !c.draft;
  if (!v) {
    // independent ops back to back without a barrier between them
    mv(c, l, 'attn_qkv.weight', B.A, U, T, { barrier: false, levels });
    if (!chunked) mv(c, l, 'attn_gate.weight', B.A, Z, T, { barrier: false, levels });
    mv(c, l, 'ssm_beta.weight', B.A, Bt, T, { barrier: false, levels });
    mv(c, l, 'ssm_alpha.weight', B.A, AL, T, { levels });
  }
  const dn = { T, dk: s.ssmHeadDim, hk: s.ssmKHeads, hv: s.ssmVHeads, convCh: st.convCh, eps: s.eps, qScale: 1 / Math.sqrt(s.ssmHeadDim) };
  const cw = wbuf(c, l, 'ssm_conv1d.weight'), dtBias = wbuf(c, l, 'ssm_dt.bias'), Aw = wbuf(c, l, 'ssm_a'), normWeight = wbuf(c, l, 'ssm_norm.weight');
  if (c.rows && !c.draft) {
    // a batched step: every row's conv and recurrence on its own state, as its one-token step, in
    // one dispatch each (the _rows kernels: row r along y is token r of the scratch, its state
    // element r of an array)
    const rows = c.rows;
    dispatch(c.ops, KR.ssm_conv, { U, weight: cw, state: rows.map((r) => r.layers[l].a), CK: U }, { convCh: st.convCh, T: 1, width: s.ssmConv, ckRows: 0 }, [groups(K.ssm_conv, st.convCh), rows.length]);
    dispatch(c.ops, KR.deltanet, { U, B: Bt, AL, dtBias, A: Aw, state: rows.map((r) => r.layers[l].b), O: B.O, Z, normWeight, CK: B.O }, { ...dn, T: 1, ckRows: 0 }, [s.ssmVHeads, rows.length]);
    mv(c, l, 'ssm_out.weight', B.O, B.A2, T);
    return { mode: 1, r: B.A2, sg: B.A2 };
  }
  const { a: conv, b: state } = c.layers[l];
  // a draft step keeps the state after each row but the last (CK; elsewhere bound, never written)
  const ck = c.draft ? h.draftCheckpoints(l) : undefined, ckRows = ck ? T - 1 : 0;
  dispatch(c.ops, K.ssm_conv, { U, weight: cw, state: conv, CK: ck?.conv ?? conv }, { convCh: st.convCh, T, width: s.ssmConv, ckRows }, [groups(K.ssm_conv, st.convCh)]);
  const common = { U, B: Bt, AL, dtBias, A: Aw, state, O: B.O };
  if (T === 1 || c.draft) {
    // one token (or a draft step's tokens in order, each as its decode step): the recurrence
    // with the q/k L2 norm and the gated output norm fused in
    dispatch(c.ops, K.deltanet, { ...common, Z, normWeight, CK: ck?.state ?? state }, { ...dn, ckRows }, [s.ssmVHeads]);
  } else {
    // several: what does not depend on the state for every 16-token block at once, then the
    // chunked form over 32-column slices of each head, then the gated norm
    dispatch(c.ops, K.deltanet_prep, { U, B: Bt, AL, dtBias, A: Aw, DBK: B.DBK }, dn, [Math.ceil(T / DELTANET_BLOCK), s.ssmVHeads]);
    const walk = K[h.deltanetWalk];
    dispatch(c.ops, walk, { U, DBK: B.DBK, state, O: B.O }, dn, [s.ssmVHeads, groups(walk, s.ssmHeadDim)], { barrier: false });
    mv(c, l, 'attn_gate.weight', B.A, Z, T, { levels });
    dispatch(c.ops, K.ssm_gnorm, { O: B.O, Z, normWeight }, { dk: s.ssmHeadDim, hv: s.ssmVHeads, eps: s.eps }, [T, s.ssmVHeads]);
  }
  mv(c, l, 'ssm_out.weight', B.O, B.A2, T);
  return { mode: 1, r: B.A2, sg: B.A2 };
}

/** Gated attention: q(+gate)/k/v, q/k norm and RoPE, KV store, flash attention in blocks and their merge, out-projection into A2. */
function attentionMixer(c: StepContext, l: number): Pending {
  const { h, T } = c, s = h.shape, B = h.buf, st = stateSizes(s);
  const qStride = 2 * s.nHead * s.headDim;
  const kRow = rowBytes(KV_TYPE_IDS[c.kvTypes.k], st.kvDim), vRow = rowBytes(KV_TYPE_IDS[c.kvTypes.v], st.kvDim);
  const levels = normLevels(c);
  const v = T === 1 && !c.rows ? h.mv.stacked(c.ops, l, 'attn_in', B.A, true, levels) : undefined;
  const [QG, Kb, Vb] = v ?? [B.QG, B.Kb, B.Vb];
  if (!v) {
    mv(c, l, 'attn_q.weight', B.A, QG, T, { barrier: false, levels });
    mv(c, l, 'attn_k.weight', B.A, Kb, T, { barrier: false, levels });
    mv(c, l, 'attn_v.weight', B.A, Vb, T, { levels });
  }
  const prep = { nHead: s.nHead, nHeadKv: s.nHeadKv, hd: s.headDim, nRot: s.nRot, qStride, kStride: st.kvDim, eps: s.eps };
  const norms = { qNorm: wbuf(c, l, 'attn_q_norm.weight'), kNorm: wbuf(c, l, 'attn_k_norm.weight'), ROPE: B.ROPE };
  const variant = `${c.kvTypes.k}_${c.kvTypes.v}`;
  // attn_flash/attn_tile's push block for blocks of blk keys, tokens from t0; a decode step's
  // blocks grow with the depth (attn_span.glsl: attn_flash and attn_merge alike), prefill's do not
  const grow = T === 1 || c.rows ? 1 : 0;
  const attnPush = (blk: number, nBlk: number, t0: number) => ({ nHead: s.nHead, nHeadKv: s.nHeadKv, hd: s.headDim, kRowBytes: kRow, vRowBytes: vRow, qStride, scale: 1 / Math.sqrt(s.headDim), nBlk, blk, t0, grow });
  if (c.rows) {
    // a batched step: every row attends over its own cache at its own position (its PARAMS row),
    // exactly as its one-token step; one dispatch of each kind for all rows (the _rows kernels:
    // row r along x is token r of the scratch, its cache and PARAMS row elements r of arrays)
    const rows = c.rows, n = rows.length, blk = attnBlock(s, 1), nBlk = Math.ceil(c.ctx / blk);
    const params = rows.map((r) => r.params), kc = rows.map((r) => r.layers[l].a), vc = rows.map((r) => r.layers[l].b);
    dispatch(c.ops, KR.qk_prep, { QG, K: Kb, ...norms, PARAMS: params }, prep, [n, s.nHead + s.nHeadKv]);
    dispatch(c.ops, KR.kv_store, { src: Kb, src2: Kb, cache: kc, cache2: kc, PARAMS: params }, { kvDim: st.kvDim, rowBytes: kRow }, [n, 1], { variant: c.kvTypes.k, barrier: false });
    dispatch(c.ops, KR.kv_store, { src: Vb, src2: Vb, cache: vc, cache2: vc, PARAMS: params }, { kvDim: st.kvDim, rowBytes: vRow }, [n, 1], { variant: c.kvTypes.v });
    dispatch(c.ops, KR.attn_flash, { QG, Kc: kc, Vc: vc, P: B.P, ML: B.ML, PARAMS: params }, attnPush(blk, nBlk, 0), [n, s.nHeadKv, nBlk], { variant });
    dispatch(c.ops, KR.attn_merge, { P: B.P, ML: B.ML, QG, O: B.O, PARAMS: params }, { nHead: s.nHead, hd: s.headDim, nBlk, qStride, blk, t0: 0, grow }, [n, s.nHead]);
    mv(c, l, 'attn_output.weight', B.O, B.A2, T);
    return { mode: 1, r: B.A2, sg: B.A2 };
  }
  const { a: kc, b: vc } = c.layers[l];
  dispatch(c.ops, K.qk_prep, { QG, K: Kb, ...norms, PARAMS: B.PARAMS }, prep, [T, s.nHead + s.nHeadKv]);
  // cache type names are the shader variant suffixes (shaders/variants.json)
  dispatch(c.ops, K.kv_store, { src: Kb, src2: Kb, cache: kc, cache2: kc, PARAMS: B.PARAMS }, { kvDim: st.kvDim, rowBytes: kRow }, [T, 1], { variant: c.kvTypes.k, barrier: false });
  dispatch(c.ops, K.kv_store, { src: Vb, src2: Vb, cache: vc, cache2: vc, PARAMS: B.PARAMS }, { kvDim: st.kvDim, rowBytes: vRow }, [T, 1], { variant: c.kvTypes.v });
  const tiled = T > 1 && c.h.options.vkAttnTile !== false && attnTileFits(s);
  const onUnits = tiled && h.matrixAttn;
  const blk = attnBlock(s, T, tiled, onUnits), nBlk = Math.ceil(c.ctx / blk);
  // attnTokens(chunk) tokens per dispatch pair (the partials P, ML hold that many)
  const per = attnTokens(h.chunk, onUnits);
  // on the matrix units: the caches' K and V up to the step's last key decoded once for every
  // pair (attn_decode part 0, beside the first pair's Q), each pair's Q before its attn_mmc
  const dec = onUnits ? {
    bind: { QG, Kc: kc, Vc: vc, QD: B.QD, KD: B.KD, VD: B.VD, PARAMS: B.PARAMS }, nHead: s.nHead, nHeadKv: s.nHeadKv, hd: s.headDim, qStride,
    kRowBytes: kRow, vRowBytes: vRow, ctx: c.ctx, variant, layout: attnDecodedLayout({ nHead: s.nHead, nHeadKv: s.nHeadKv, hd: s.headDim, tokens: Math.min(T, per), ctx: c.ctx }),
  } : undefined;
  if (dec) dispatchAttnDecode(c.ops, dec, { part: 0, t0: 0, nTok: T, barrier: false });
  for (let t0 = 0; t0 < T; t0 += per) {
    const n = Math.min(per, T - t0);
    const push = attnPush(blk, nBlk, t0);
    const bind = { QG, Kc: kc, Vc: vc, P: B.P, ML: B.ML, PARAMS: B.PARAMS };
    const tq = attnTileTokens(s), tiles: [number, number, number] = [Math.ceil(n / tq), s.nHeadKv, nBlk];
    if (dec) {
      // prefill on the matrix units, as the matmuls are (attn-decoded.ts)
      dispatchAttnDecode(c.ops, dec, { part: 1, t0, nTok: n });
      dispatch(c.ops, K.attn_mmc, { QD: B.QD, KD: B.KD, VD: B.VD, P: B.P, ML: B.ML, PARAMS: B.PARAMS }, { ...push, kScales: dec.layout.kScales, vLo: dec.layout.vLo, nTok: n, tq }, tiles, { variant: c.kvTypes.k });
    } else if (tiled) {
      // prefill: tiles of tokens × the KV head's query heads share every K/V read
      dispatch(c.ops, K.attn_tile, bind, { ...push, nTok: n, tq }, tiles, { variant });
    } else {
      dispatch(c.ops, K.attn_flash, bind, push, [n, s.nHeadKv, nBlk], { variant });
    }
    dispatch(c.ops, K.attn_merge, { P: B.P, ML: B.ML, QG, O: B.O, PARAMS: B.PARAMS }, { nHead: s.nHead, hd: s.headDim, nBlk, qStride, blk, t0, grow }, [n, s.nHead]);
  }
  mv(c, l, 'attn_output.weight', B.O, B.A2, T);
  return { mode: 1, r: B.A2, sg: B.A2 };
}

/** Steering: y += scale · direction of layer l (attention output, or the MoE output before its add). */
function steer(c: StepContext, l: number, y: number, scale: number): void {
  const s = c.h.shape;
  dispatch(c.ops, K.steer, { Y: y, STEER: c.h.buf.STEER }, { n: s.nEmbd, dOffset: l * s.nEmbd, s: scale }, [c.T]);
}

/** MoE: router and shared expert over the normed input, routed experts (grouped by expert for several tokens), down projections. */
function moeFfn(c: StepContext, l: number): Pending {
  const { h, T } = c, s = h.shape, B = h.buf, Kx = s.nExpertUsed, has = (n: WeightKey) => h.w.t.has(`blk.${l}.${n}`);
  // shared expert and router logits only need the normed input: issued back to back
  const rv = T === 1 ? h.mv.stacked(c.ops, l, 'router_in', B.A, false) : undefined;
  const [R, SG] = rv ?? [B.R, B.SG];
  const route = (barrier: boolean) => dispatch(c.ops, K.router, { R, IDS: B.IDS, WTS: B.WTS }, { nExpert: s.nExpert, K: Kx }, [T], { barrier });
  // a batched decode step's rows: each routed by its router matvec row's last workgroup, as a
  // row alone is (no level of its own); prefill chunks: the router logits' matmul (a few dozen
  // workgroups: it leaves most of the GPU idle) beside the shared-expert gate and gate+up, which
  // only need the normed input, then the routing
  const routed = !rv && c.rows !== undefined && h.mv.routeRows(c.ops, l, B.A, T, false);
  const routeAfter = !rv && !routed;
  if (!rv) {
    if (!routed) mv(c, l, 'ffn_gate_inp.weight', B.A, R, T, { barrier: false, exact: true });
    // the shared-expert gate is a 1-row F32 matvec over the same normed input
    mv(c, l, 'ffn_gate_inp_shexp.weight', B.A, SG, T, { yStride: 1, barrier: false });
  }
  if (has('ffn_gate_up_shexp.weight')) {
    mv(c, l, 'ffn_gate_up_shexp.weight', B.A, B.GS, T, { levels: normLevels(c) });
  } else {
    mv(c, l, 'ffn_gate_shexp.weight', B.A, B.GS, T, { barrier: false });
    mv(c, l, 'ffn_up_shexp.weight', B.A, B.US, T);
    dispatch(c.ops, K.swiglu, { G: B.GS, U: B.US }, { n: T * s.nFfShexp }, [groups(K.swiglu, T * s.nFfShexp)], { barrier: false });
  }
  // one row's routing: done by the router matvec's last workgroup (stacked() says so), else here
  if (routeAfter || (rv && !h.mv.routesInMatvec(l))) route(true);
  // SSD streaming: the step stops here; the host loads the routed experts into slots and
  // rewrites IDS (and LIST/TILES) as slot ids before the rest runs (expert-stream.ts)
  const streamed = h.streams(l);
  if (streamed) c.ops.cut(l);
  // several tokens: their (token, expert) pairs grouped by expert, so that each expert's weights
  // are decoded once for all its tokens (mm_moe); one token: a matvec per expert
  // (a batched decode step's rows pick mostly different experts, ~1 pair each: grouping would
  // fill each tile with one pair, so they take the per-pair matvec as decode does)
  const bn = moePairs(h.coopmat);
  const moe = T === 1 || c.rows ? undefined : { tiles: B.TILES, maxTiles: moeMaxTiles(T * Kx, s.nExpert, bn), ids: B.IDS };
  if (moe && !streamed) dispatch(c.ops, K.moe_tiles, { IDS: B.IDS, LIST: B.LIST, TILES: B.TILES }, { nPairs: T * Kx, nExpert: s.nExpert, BN: bn }, [1]);
  if (has('ffn_gate_up_exps.weight')) {
    mv(c, l, 'ffn_gate_up_exps.weight', B.A, B.GE, T * Kx, { flags: MV.gather, moe, levels: normLevels(c, false) });
  } else {
    mv(c, l, 'ffn_gate_exps.weight', B.A, B.GE, T * Kx, { flags: MV.gather, barrier: false, moe });
    mv(c, l, 'ffn_up_exps.weight', B.A, B.UE, T * Kx, { flags: MV.gather, moe });
    dispatch(c.ops, K.swiglu, { G: B.GE, U: B.UE }, { n: T * Kx * s.nFfExp }, [groups(K.swiglu, T * Kx * s.nFfExp)]);
  }
  // the SwiGLU outputs as int8 levels for the down projections where mvq.comp takes them
  const downLevels = levelsOn(c) && h.mv.levelsFor(`blk.${l}.ffn_down_exps.weight`);
  if (downLevels) dispatch(c.ops, K.quant, { X: B.GE, XQ: B.XQE, XS: B.XSE }, { n: s.nFfExp }, [groups(K.quant, s.nFfExp), T * Kx]);
  mv(c, l, 'ffn_down_exps.weight', B.GE, B.DE, T * Kx, { flags: MV.gather | MV.ownRow, barrier: false, moe, levels: downLevels ? { q: B.XQE, s: B.XSE } : undefined });
  mv(c, l, 'ffn_down_shexp.weight', B.GS, B.DS, T);
  const st = h.options.steering;
  if (st && st.ffnScale !== 0) {
    // FFN steering edits the MoE output before the residual add
    dispatch(c.ops, K.moe_combine, { M: B.M, DE: B.DE, WTS: B.WTS, DS: B.DS, SG }, { nEmbd: s.nEmbd, K: Kx, T }, [groups(K.moe_combine, T * s.nEmbd)]);
    steer(c, l, B.M, st.ffnScale);
    return { mode: 1, r: B.M, sg: B.A2 };
  }
  return { mode: 2, r: B.A2, sg: SG };
}

/**
 * Final norm, LM head and the arg-max stages for rows [from, T) (earlier rows are never read).
 * The arg-max is the last row's, or every row's in a batched step (ARG row i = logits row i).
 * With hiddenFrom < T, rows [hiddenFrom, T) after the final norm also go to A2 (an MTP head's
 * input, read back before the next step; its norm applies the pending update, so the LM head's
 * norm of the same X has none). A2 is free here: the last pending update is the MoE's, which
 * reads DE/WTS/DS/SG (or M, steered), never A2.
 */
function outputHead(c: StepContext, p: Pending, from: number, hiddenFrom = c.T): void {
  const { h, T } = c, s = h.shape, B = h.buf, n = T - from, weight = h.w.buf('output_norm.weight');
  if (hiddenFrom < T) {
    if (p.mode === 1 && p.r === B.A2) throw new Error('outputHead: the pending update reads A2, where the hidden rows would go');
    norm(c, weight, p, hiddenFrom, T - hiddenFrom, false, B.A2);
    p = none(c);
  }
  if (n <= 0) return;
  norm(c, weight, p, from, n, !!normLevels(c));
  h.mv.matvec(c.ops, 'output.weight', B.A, B.LOGITS, n, { levels: normLevels(c) });
  // greedy decoding reads ARG instead of the logits row (see forward's deferLast)
  recordArgmax(c.ops, B, s.nVocab, c.rows ? n : 1, c.rows ? 0 : (n - 1) * s.nVocab);
  if (c.topK && !c.rows) recordTopK(c.ops, B, s.nVocab, c.topK, n - 1);
}

/**
 * The whole step: embeddings in, every layer, logits for rows ≥ logitsFrom (and the rows ≥
 * hiddenFrom after the final norm in A2). An MTP head's step (its engine holds INPUT_PROJ) takes
 * rows of [normed embedding | normed hidden state], twice as wide, and projects them into X.
 */
export function recordStep(c: StepContext, logitsFrom: number, hiddenFrom = c.T): void {
  const { h, T } = c, s = h.shape, B = h.buf, steering = h.options.steering;
  // a batched step's rows each have their parameter row (paramWords apart)
  const np = c.rows ? c.rows.length * c.paramWords : 4;
  const head = h.w.t.has(INPUT_PROJ), n = T * s.nEmbd * (head ? 2 : 1);
  dispatch(c.ops, K.step_in, { XIN: B.XIN, X: head ? B.WIN : B.X, PIN: B.PIN, PARAMS: B.PARAMS }, { n, np }, [groups(K.step_in, Math.max(n, np))]);
  if (head) h.mv.matvec(c.ops, INPUT_PROJ, B.WIN, B.X, T);
  let pending = none(c);
  for (let l = 0; l < s.nLayer; l++) {
    norm(c, wbuf(c, l, 'attn_norm.weight'), pending, 0, T, !!normLevels(c));
    pending = s.recurrent[l] ? deltanetMixer(c, l) : attentionMixer(c, l);
    if (steering && steering.attnScale !== 0) steer(c, l, B.A2, steering.attnScale);
    norm(c, wbuf(c, l, 'post_attention_norm.weight'), pending, 0, T, !!normLevels(c, false));
    pending = moeFfn(c, l);
  }
  // rows before logitsFrom (and hiddenFrom) are never read again, so their last residual update is skipped
  if (T - Math.min(logitsFrom, hiddenFrom) > 0) outputHead(c, pending, logitsFrom, hiddenFrom);
}
