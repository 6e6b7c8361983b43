// The qwen35moe forward pass (model-spec §3), for a chunk of T consecutive tokens of one session.
// Projections are batched over the chunk (each weight row decoded once per chunk); the
// recurrences (attention over the cache, DeltaNet state) run token by token in order, so a chunk
// gives the same result as feeding its tokens one at a time.

import { matmul } from '../quant/rows';
import { dotF32 } from '../quant/dot';
import { dequantRow, quantizeRow } from '../quant/rows';
import * as L from './layout';
import { addInto, axpy, fptr, l2norm, ld, rmsnorm, rope, sigmoid, silu, softmax, softplus, st, steer } from './ops';
import { alloc } from '../mem';

// JS makes sure the given experts of a layer are resident and their expert-table entries set.
// @ts-ignore: decorator
@external("env", "ensureExperts")
declare function ensureExperts(layer: i32, ids: usize, n: i32): void;

// ---- model configuration (read once from the hyperparameter block) ----
let nLayer = 0, nEmbd = 0, nVocab = 0, nHead = 0, nHeadKv = 0, headDim = 0, nRot = 0;
let ssmConv = 0, dk = 0, hk = 0, hv = 0, nExpert = 0, nUsed = 0, nFf = 0, nFfSh = 0, maxT = 0;
let eps: f32 = 1e-6;
let theta: f64 = 1e7;
let recurrent: usize = 0, tensors: usize = 0, experts: usize = 0;
let convCh = 0, inner = 0;

// ---- scratch (sized for maxT tokens at configure time) ----
let A: usize = 0, B1: usize = 0, B2: usize = 0, B3: usize = 0, B4: usize = 0, ATT: usize = 0;
let ROUTE: usize = 0, SEL_ID: usize = 0, SEL_W: usize = 0, LISTS: usize = 0, COUNTS: usize = 0, HIT: usize = 0;
let XE: usize = 0, GE: usize = 0, UE: usize = 0, DE: usize = 0, MOE: usize = 0, SHG: usize = 0;
let KTMP: usize = 0, VTMP: usize = 0;
// the MTP head's input rows: [rms(embedding) | rms(hidden)] per token (mtpInput)
let CAT: usize = 0;

// ---- activation statistics (q36-imatrix): 0 = off ----
// A table of nLayer × N_SLOTS u32 pointers (0 = not collected). Each points at f32 sums of the
// squared input activations per column (ne0 × nExp, nExp = nExpert for the routed-expert slots,
// else 1) followed by nExp f32 token counts: llama-imatrix's in_sum2 and counts.
let ACT: usize = 0;

export function setActivationStats(table: usize): void {
  ACT = table;
}

function collect(layer: i32, slot: i32, e: i32, x: usize, T: i32, ne0: i32): void {
  const p = <usize>load<u32>(ACT + <usize>((layer * L.N_SLOTS + slot) << 2));
  if (p == 0) return;
  const nExp = slot == L.S_GATE_EXPS || slot == L.S_UP_EXPS || slot == L.S_DOWN_EXPS ? nExpert : 1;
  const sums = p + (<usize>(e * ne0) << 2);
  for (let t = 0; t < T; t++) {
    const row = fptr(x, t * ne0);
    for (let i = 0; i < ne0; i++) { const v = ld(row, i); st(sums, i, ld(sums, i) + v * v); }
  }
  const c = p + (<usize>(nExp * ne0 + e) << 2);
  store<f32>(c, load<f32>(c) + <f32>T);
}

function need(p: usize): usize {
  if (p == 0) unreachable(); // out of memory: JS checks alloc sizes before configure
  return p;
}
function falloc(n: i32): usize { return need(alloc(<usize>n << 2)); }

/** Reads the hyperparameter block and allocates scratch. Returns 0 on success. */
export function engineConfigure(h: usize): i32 {
  nLayer = load<i32>(h, L.H_N_LAYER); nEmbd = load<i32>(h, L.H_N_EMBD); nVocab = load<i32>(h, L.H_N_VOCAB);
  nHead = load<i32>(h, L.H_N_HEAD); nHeadKv = load<i32>(h, L.H_N_HEAD_KV); headDim = load<i32>(h, L.H_HEAD_DIM);
  nRot = load<i32>(h, L.H_N_ROT); ssmConv = load<i32>(h, L.H_SSM_CONV); dk = load<i32>(h, L.H_SSM_HEAD_DIM);
  hk = load<i32>(h, L.H_SSM_K_HEADS); hv = load<i32>(h, L.H_SSM_V_HEADS); nExpert = load<i32>(h, L.H_N_EXPERT);
  nUsed = load<i32>(h, L.H_N_EXPERT_USED); nFf = load<i32>(h, L.H_N_FF_EXP); nFfSh = load<i32>(h, L.H_N_FF_SHEXP);
  eps = load<f32>(h, L.H_EPS); theta = load<f64>(h, L.H_ROPE_THETA); maxT = load<i32>(h, L.H_MAX_TOKENS);
  recurrent = load<u32>(h, L.H_RECURRENT); tensors = load<u32>(h, L.H_TENSORS); experts = load<u32>(h, L.H_EXPERTS);
  convCh = 2 * hk * dk + hv * dk;
  inner = hv * dk;
  const T = maxT;
  A = falloc(T * nEmbd);
  B1 = falloc(T * max(2 * nHead * headDim, convCh));
  B2 = falloc(T * max(nHeadKv * headDim, inner));
  B3 = falloc(T * max(nHeadKv * headDim, hv));
  B4 = falloc(T * hv);
  ATT = falloc(T * max(nHead * headDim, inner));
  ROUTE = falloc(T * nExpert);
  SEL_ID = falloc(T * nUsed);
  SEL_W = falloc(T * nUsed);
  LISTS = falloc(nExpert * T);
  COUNTS = falloc(nExpert);
  HIT = falloc(nExpert);
  XE = falloc(T * nEmbd);
  GE = falloc(T * max(nFf, nFfSh));
  UE = falloc(T * max(nFf, nFfSh));
  DE = falloc(T * nEmbd);
  MOE = falloc(T * nEmbd);
  SHG = falloc(T);
  KTMP = falloc(nHeadKv * headDim);
  VTMP = falloc(nHeadKv * headDim);
  CAT = falloc(T * 2 * nEmbd);
  return 0;
}

// ---- tensor table access ----
// @ts-ignore: decorator
@inline function ent(layer: i32, slot: i32): usize { return tensors + <usize>((layer * L.N_SLOTS + slot) * L.T_ENTRY); }
// @ts-ignore: decorator
@inline function tptr(layer: i32, slot: i32): usize { return load<u32>(ent(layer, slot)); }

/** y[t·rows + r] = W[r]·x[t] for the T rows of x (each n = ne0 floats). */
function proj(layer: i32, slot: i32, x: usize, T: i32, y: usize): void {
  const e = ent(layer, slot);
  const rows = load<i32>(e, 16);
  if (ACT) collect(layer, slot, 0, x, T, load<i32>(e, 12));
  matmul(load<i32>(e, 4), load<u32>(e), load<u32>(e, 8), rows, x, load<i32>(e, 12), T, y, rows);
}

// ---- session table access ----
// @ts-ignore: decorator
@inline function layerA(sess: usize, l: i32): usize { return load<u32>(sess + L.SS_LAYERS + <usize>(l * 8)); }
// @ts-ignore: decorator
@inline function layerB(sess: usize, l: i32): usize { return load<u32>(sess + L.SS_LAYERS + <usize>(l * 8 + 4)); }

/** Gated full attention over the KV cache for T tokens at positions pos..pos+T−1. Output in ATT → A. */
function attention(l: i32, sess: usize, pos: i32, a: usize, T: i32): void {
  const qDim = 2 * nHead * headDim, kvDim = nHeadKv * headDim;
  proj(l, L.S_Q, a, T, B1); // per head: [query 256 | gate 256]
  proj(l, L.S_K, a, T, B2);
  proj(l, L.S_V, a, T, B3);
  const kType = load<i32>(sess, L.SS_K_TYPE), vType = load<i32>(sess, L.SS_V_TYPE);
  const kRow = <usize>load<u32>(sess, L.SS_K_ROW), vRow = <usize>load<u32>(sess, L.SS_V_ROW);
  const kc = layerA(sess, l), vc = layerB(sess, l);
  const scores = <usize>load<u32>(sess, L.SS_SCORES);
  const ctx = load<i32>(sess, L.SS_CTX);
  const qn = tptr(l, L.S_Q_NORM), kn = tptr(l, L.S_K_NORM);
  const scale = <f32>(1.0 / Math.sqrt(<f64>headDim));
  const group = nHead / nHeadKv;
  for (let t = 0; t < T; t++) {
    const p = pos + t;
    const qg = fptr(B1, t * qDim), k = fptr(B2, t * kvDim), v = fptr(B3, t * kvDim);
    // q/k RMSNorm per head, then RoPE; the cache stores normed and rotated K
    for (let h = 0; h < nHead; h++) {
      const q = fptr(qg, h * 2 * headDim);
      rmsnorm(q, q, qn, headDim, eps);
      rope(q, nRot, p, theta);
    }
    for (let j = 0; j < nHeadKv; j++) {
      const kj = fptr(k, j * headDim);
      rmsnorm(kj, kj, kn, headDim, eps);
      rope(kj, nRot, p, theta);
    }
    quantizeRow(kType, k, kc + <usize>p * kRow, kvDim);
    quantizeRow(vType, v, vc + <usize>p * vRow, kvDim);
    // scores s[h][u] = q_h · k_u / sqrt(d), causal: u ≤ p; each K row is decoded once for all heads
    for (let u = 0; u <= p; u++) {
      dequantRow(kType, kc + <usize>u * kRow, KTMP, kvDim);
      for (let h = 0; h < nHead; h++) {
        const q = fptr(qg, h * 2 * headDim);
        st(scores, h * ctx + u, dotF32(q, fptr(KTMP, (h / group) * headDim), headDim) * scale);
      }
    }
    for (let h = 0; h < nHead; h++) softmax(fptr(scores, h * ctx), p + 1);
    const o = fptr(ATT, t * nHead * headDim);
    memory.fill(o, 0, <usize>(nHead * headDim) << 2);
    for (let u = 0; u <= p; u++) {
      dequantRow(vType, vc + <usize>u * vRow, VTMP, kvDim);
      for (let h = 0; h < nHead; h++) axpy(fptr(o, h * headDim), ld(scores, h * ctx + u), fptr(VTMP, (h / group) * headDim), headDim);
    }
    // sigmoid output gate (second half of each head's q slice)
    for (let h = 0; h < nHead; h++) {
      const g = fptr(qg, h * 2 * headDim + headDim), oh = fptr(o, h * headDim);
      for (let i = 0; i < headDim; i++) st(oh, i, ld(oh, i) * sigmoid(ld(g, i)));
    }
  }
  proj(l, L.S_O, ATT, T, A);
}

/** Gated DeltaNet for T tokens: conv + recurrence token by token, state in f32. Output → A. */
function deltanet(l: i32, sess: usize, a: usize, T: i32): void {
  proj(l, L.S_QKV, a, T, B1); // [q hk·dk | k hk·dk | v hv·dk]
  proj(l, L.S_Z, a, T, B2);
  proj(l, L.S_BETA, a, T, B3);
  proj(l, L.S_ALPHA, a, T, B4);
  const conv = tptr(l, L.S_CONV), dt = tptr(l, L.S_DT), aLog = tptr(l, L.S_A), nw = tptr(l, L.S_SSM_NORM);
  const cs = layerA(sess, l), S = layerB(sess, l);
  const w = ssmConv, hist = ssmConv - 1;
  const qScale = <f32>(1.0 / Math.sqrt(<f64>dk));
  for (let t = 0; t < T; t++) {
    const u = fptr(B1, t * convCh);
    // causal depthwise conv over [history | current], then SiLU; history keeps pre-conv inputs
    for (let c = 0; c < convCh; c++) {
      const taps = fptr(conv, c * w), hc = fptr(cs, c * hist);
      const xc = ld(u, c);
      let acc = ld(taps, w - 1) * xc;
      for (let i = 0; i < hist; i++) acc += ld(taps, i) * ld(hc, i);
      for (let i = 0; i + 1 < hist; i++) st(hc, i, ld(hc, i + 1));
      st(hc, hist - 1, xc);
      st(u, c, silu(acc));
    }
    for (let h = 0; h < hk; h++) {
      l2norm(fptr(u, h * dk), dk, 1e-6, qScale);
      l2norm(fptr(u, hk * dk + h * dk), dk, 1e-6, 1);
    }
    const o = fptr(ATT, t * inner), z = fptr(B2, t * inner);
    for (let h = 0; h < hv; h++) {
      const kh = h % hk; // GGUF value-head tiling
      const q = fptr(u, kh * dk), k = fptr(u, hk * dk + kh * dk), v = fptr(u, 2 * hk * dk + h * dk);
      const beta = sigmoid(ld(B3, t * hv + h));
      const decay = Mathf.exp(ld(aLog, h) * softplus(ld(B4, t * hv + h) + ld(dt, h)));
      const Sh = fptr(S, h * dk * dk); // row j = value column j, contiguous over key index i
      const oh = fptr(o, h * dk);
      for (let j = 0; j < dk; j++) {
        const row = fptr(Sh, j * dk);
        // decay, read r = S_j·k, delta update, output o_j = S_j·q (state updated first)
        const dv = f32x4.splat(decay);
        for (let i = 0; i < dk; i += 4) v128.store(row + (<usize>i << 2), f32x4.mul(v128.load(row + (<usize>i << 2)), dv));
        const r = dotF32(row, k, dk);
        const delta = beta * (ld(v, j) - r);
        axpy(row, delta, k, dk);
        st(oh, j, dotF32(row, q, dk));
      }
      // gated RMSNorm with a plain weight, then × silu(z)
      rmsnorm(oh, oh, nw, dk, eps);
      const zh = fptr(z, h * dk);
      for (let i = 0; i < dk; i++) st(oh, i, ld(oh, i) * silu(ld(zh, i)));
    }
  }
  proj(l, L.S_SSM_OUT, ATT, T, A);
}

/** Mixture of experts for T normed rows f: routed top-k + sigmoid-gated shared expert → MOE. */
function moe(l: i32, f: usize, T: i32): void {
  proj(l, L.S_ROUTER, f, T, ROUTE);
  memory.fill(COUNTS, 0, <usize>nExpert << 2);
  for (let t = 0; t < T; t++) {
    const p = fptr(ROUTE, t * nExpert);
    softmax(p, nExpert);
    // top-k by repeated selection (ties: lowest expert id), then renormalise
    let sum: f32 = 0;
    for (let k = 0; k < nUsed; k++) {
      let best = -1;
      let bv: f32 = -1;
      for (let e = 0; e < nExpert; e++) {
        const v = ld(p, e);
        if (v > bv) { bv = v; best = e; }
      }
      store<i32>(fptr(SEL_ID, t * nUsed + k), best);
      st(SEL_W, t * nUsed + k, bv);
      st(p, best, -2); // taken
      sum += bv;
    }
    for (let k = 0; k < nUsed; k++) st(SEL_W, t * nUsed + k, ld(SEL_W, t * nUsed + k) / sum);
    for (let k = 0; k < nUsed; k++) {
      const e = load<i32>(fptr(SEL_ID, t * nUsed + k));
      const c = load<i32>(fptr(COUNTS, e));
      store<i32>(fptr(LISTS, e * maxT + c), t * nUsed + k); // token·k slot
      store<i32>(fptr(COUNTS, e), c + 1);
    }
  }
  // the experts hit by this chunk, loaded (or confirmed resident) in one call
  let nHit = 0;
  for (let e = 0; e < nExpert; e++) if (load<i32>(fptr(COUNTS, e)) > 0) store<i32>(fptr(HIT, nHit++), e);
  ensureExperts(l, HIT, nHit);
  memory.fill(MOE, 0, <usize>(T * nEmbd) << 2);
  const eg = ent(l, L.S_GATE_EXPS), eu = ent(l, L.S_UP_EXPS), ed = ent(l, L.S_DOWN_EXPS);
  for (let hI = 0; hI < nHit; hI++) {
    const e = load<i32>(fptr(HIT, hI));
    const n = load<i32>(fptr(COUNTS, e));
    const te = experts + <usize>((l * nExpert + e) * L.E_ENTRY);
    for (let i = 0; i < n; i++) {
      const t = load<i32>(fptr(LISTS, e * maxT + i)) / nUsed;
      memory.copy(fptr(XE, i * nEmbd), fptr(f, t * nEmbd), <usize>nEmbd << 2);
    }
    if (ACT) { collect(l, L.S_GATE_EXPS, e, XE, n, nEmbd); collect(l, L.S_UP_EXPS, e, XE, n, nEmbd); }
    matmul(load<i32>(eg, 4), load<u32>(te), load<u32>(eg, 8), nFf, XE, nEmbd, n, GE, nFf);
    matmul(load<i32>(eu, 4), load<u32>(te, 4), load<u32>(eu, 8), nFf, XE, nEmbd, n, UE, nFf);
    for (let i = 0; i < n * nFf; i++) st(GE, i, silu(ld(GE, i)) * ld(UE, i));
    if (ACT) collect(l, L.S_DOWN_EXPS, e, GE, n, nFf);
    matmul(load<i32>(ed, 4), load<u32>(te, 8), load<u32>(ed, 8), nEmbd, GE, nFf, n, DE, nEmbd);
    for (let i = 0; i < n; i++) {
      const slot = load<i32>(fptr(LISTS, e * maxT + i));
      axpy(fptr(MOE, (slot / nUsed) * nEmbd), ld(SEL_W, slot), fptr(DE, i * nEmbd), nEmbd);
    }
  }
  // shared expert, gated by sigmoid(w · f)
  const gInp = tptr(l, L.S_SHEXP_GATE_INP);
  if (ACT) collect(l, L.S_SHEXP_GATE_INP, 0, f, T, nEmbd);
  proj(l, L.S_SHEXP_GATE, f, T, GE);
  proj(l, L.S_SHEXP_UP, f, T, UE);
  for (let i = 0; i < T * nFfSh; i++) st(GE, i, silu(ld(GE, i)) * ld(UE, i));
  proj(l, L.S_SHEXP_DOWN, GE, T, DE);
  for (let t = 0; t < T; t++) axpy(fptr(MOE, t * nEmbd), sigmoid(dotF32(gInp, fptr(f, t * nEmbd), nEmbd)), fptr(DE, t * nEmbd), nEmbd);
}

/**
 * Runs T tokens whose embeddings are in x (T × nEmbd, overwritten: it is the residual stream)
 * at positions pos… of the session. Logits of rows logitsFrom..T−1 go to `logits` (row-major).
 * Rows normFrom..T−1 (normFrom ≤ logitsFrom; or logitsFrom when larger) are also left after the
 * final norm in hiddenRows() (the MTP head's input), without the LM head for those before logitsFrom.
 */
export function forward(sess: usize, pos: i32, x: usize, T: i32, logits: usize, logitsFrom: i32, normFrom: i32): i32 {
  if (T < 1 || T > maxT) return -1;
  if (pos + T > load<i32>(sess, L.SS_CTX)) return -2;
  const steerDirs = <usize>load<u32>(sess, L.SS_STEER);
  const sAttn = load<f32>(sess, L.SS_STEER_ATTN), sFfn = load<f32>(sess, L.SS_STEER_FFN);
  for (let l = 0; l < nLayer; l++) {
    // mixer: h = h + Mixer(rms(h))
    const an = tptr(l, L.S_ATTN_NORM);
    for (let t = 0; t < T; t++) rmsnorm(fptr(A, t * nEmbd), fptr(x, t * nEmbd), an, nEmbd, eps);
    if (load<u8>(recurrent + <usize>l)) deltanet(l, sess, A, T);
    else attention(l, sess, pos, A, T);
    for (let t = 0; t < T; t++) {
      if (steerDirs && sAttn != 0) steer(fptr(A, t * nEmbd), fptr(steerDirs, l * nEmbd), sAttn, nEmbd);
      addInto(fptr(x, t * nEmbd), fptr(A, t * nEmbd), nEmbd);
    }
    // FFN: h = h + MoE(rms(h))
    const pn = tptr(l, L.S_POST_NORM);
    for (let t = 0; t < T; t++) rmsnorm(fptr(A, t * nEmbd), fptr(x, t * nEmbd), pn, nEmbd, eps);
    moe(l, A, T);
    for (let t = 0; t < T; t++) {
      if (steerDirs && sFfn != 0) steer(fptr(MOE, t * nEmbd), fptr(steerDirs, l * nEmbd), sFfn, nEmbd);
      addInto(fptr(x, t * nEmbd), fptr(MOE, t * nEmbd), nEmbd);
    }
  }
  // final norm and LM head for the rows whose logits are wanted
  const h0 = normFrom >= 0 && normFrom < logitsFrom ? normFrom : logitsFrom;
  const n = T - h0, m = T - logitsFrom;
  if (n > 0) {
    const on = tptr(nLayer, L.S_OUTPUT_NORM);
    for (let t = 0; t < n; t++) rmsnorm(fptr(A, t * nEmbd), fptr(x, (h0 + t) * nEmbd), on, nEmbd, eps);
  }
  if (m > 0) {
    const e = ent(nLayer, L.S_OUTPUT);
    matmul(load<i32>(e, 4), load<u32>(e), load<u32>(e, 8), nVocab, fptr(A, (logitsFrom - h0) * nEmbd), nEmbd, m, logits, nVocab);
  }
  return 0;
}

/**
 * The rows the last forward normed (rows normFrom or logitsFrom..T−1 after the final norm,
 * nEmbd floats each): the trunk's hidden state that the MTP head reads, or the MTP head's own
 * (after its shared_head_norm), which a deeper draft feeds back.
 */
export function hiddenRows(): usize {
  return A;
}

/**
 * The MTP head's input (model-spec: nextn): z[t] = eh_proj · [rms(e[t]; enorm) | rms(h[t]; hnorm)]
 * for T rows, embedding first. enorm and hnorm are F32 rows; eh_proj a 2·nEmbd → nEmbd matrix
 * (type, data, rowBytes). z may be e.
 */
export function mtpInput(e: usize, h: usize, T: i32, enorm: usize, hnorm: usize, ehType: i32, eh: usize, ehRowBytes: usize, z: usize): i32 {
  if (T < 1 || T > maxT) return -1;
  for (let t = 0; t < T; t++) {
    rmsnorm(fptr(CAT, t * 2 * nEmbd), fptr(e, t * nEmbd), enorm, nEmbd, eps);
    rmsnorm(fptr(CAT, t * 2 * nEmbd + nEmbd), fptr(h, t * nEmbd), hnorm, nEmbd, eps);
  }
  matmul(ehType, eh, ehRowBytes, nEmbd, CAT, 2 * nEmbd, T, z, nEmbd);
  return 0;
}

/** Embedding rows: dequantizes token rows given as (already read) bytes into x. */
export function embedRows(type: i32, rows: usize, rowBytes: usize, T: i32, x: usize): void {
  for (let t = 0; t < T; t++) dequantRow(type, rows + <usize>t * rowBytes, fptr(x, t * nEmbd), nEmbd);
}

