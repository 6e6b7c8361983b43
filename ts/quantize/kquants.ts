/**
 * Q8_0, Q2_K and Q4_K row quantizers, following ggml-quants.c (llama.cpp) operation for operation
 * so that a file made here is byte-identical to llama-quantize's. With an importance matrix the K
 * types search scale and min per sub-block by weighted least squares (make_qkx3 / make_qp below);
 * without one they use the reference search (make_qkx2). Every intermediate is a float (see
 * float32.ts): the byte identity depends on it.
 */
import { f32ToF16, f16ToF32 } from '../model/f16.js';
import { f, importance, mad, nearestInt, roundAway, sumSquares, F_0_1, F_0_05, F_M0_9, F_M0_5, GROUP_MAX_EPS } from './float32.js';

export const QK_K = 256;

/** Stores v as f16 at `at`; returns the value it now holds (the quantizers continue with it). */
export function putF16(out: Uint8Array, at: number, v: number): number {
  const h = f32ToF16(v);
  out[at] = h & 0xff;
  out[at + 1] = h >>> 8;
  return f16ToF32(h);
}

// ---------------------------------------------------------------- Q8_0

/** 32 values → 34 bytes: f16 scale amax/127, int8 values rounded half away from zero. */
export function quantizeQ8_0(x: Float32Array, out: Uint8Array): void {
  const nb = x.length / 32;
  for (let i = 0; i < nb; i++) {
    let amax = 0;
    for (let j = 0; j < 32; j++) amax = Math.max(amax, Math.abs(x[i * 32 + j]));
    const d = f(amax / 127);
    const id = d ? f(1 / d) : 0;
    const o = i * 34;
    putF16(out, o, d);
    for (let j = 0; j < 32; j++) out[o + 2 + j] = roundAway(f(x[i * 32 + j] * id)) & 0xff;
  }
}

// ---------------------------------------------------------------- scale searches

interface MinScale { scale: number; min: number }

/** The two affine searches of ggml-quants.c, which differ only where noted. */
interface FitOptions {
  rmin: number;
  rdelta: number;
  nstep: number;
  /** error measure: |Δ| (make_qkx2 for Q2_K) or Δ² */
  useMad: boolean;
  /**
   * make_qkx3_quants (the imatrix path) gives up when max ≤ min, so a sub-block of only negative
   * values (min clamped to 0) quantizes to zeros; make_qkx2_quants only when max = min
   */
  qkx3: boolean;
}

/**
 * make_qkx2_quants / make_qkx3_quants: the affine (scale, −min) fit of n values to 0..nmax under
 * weights w, by a grid of inverse scales around nmax / (max − min), each refined by weighted least
 * squares; L gets the levels.
 */
function makeQkx(n: number, nmax: number, x: Float32Array, xo: number, w: Float32Array, L: Uint8Array, lo: number,
  aux: Uint8Array, o: FitOptions): MinScale {
  let min = x[xo], max = x[xo];
  let sumW = w[0];
  let sumX = f(sumW * x[xo]);
  for (let i = 1; i < n; i++) {
    const xi = x[xo + i];
    if (xi < min) min = xi;
    if (xi > max) max = xi;
    sumW = f(sumW + w[i]);
    sumX = f(sumX + f(w[i] * xi));
  }
  if (min > 0) min = 0;
  if (o.qkx3 ? max <= min : max === min) {
    for (let i = 0; i < n; i++) L[lo + i] = 0;
    return { scale: 0, min: -min };
  }
  const err = (d: number) => (o.useMad ? Math.abs(d) : f(d * d));
  let iscale = f(nmax / f(max - min));
  let scale = f(1 / iscale);
  let best = 0;
  for (let i = 0; i < n; i++) {
    const l = nearestInt(f(iscale * f(x[xo + i] - min)));
    L[lo + i] = Math.max(0, Math.min(nmax, l));
    best = f(best + f(w[i] * err(f(f(f(scale * L[lo + i]) + min) - x[xo + i]))));
  }
  if (o.nstep < 1) return { scale, min: -min };
  for (let is = 0; is <= o.nstep; is++) {
    iscale = f(f(f(o.rmin + f(o.rdelta * is)) + nmax) / f(max - min));
    let sumL = 0, sumL2 = 0, sumXL = 0;
    for (let i = 0; i < n; i++) {
      let l = nearestInt(f(iscale * f(x[xo + i] - min)));
      l = Math.max(0, Math.min(nmax, l));
      aux[i] = l;
      const wi = w[i];
      sumL = f(sumL + f(wi * l));
      sumL2 = f(sumL2 + f(f(wi * l) * l));
      sumXL = f(sumXL + f(f(wi * l) * x[xo + i]));
    }
    const D = f(f(sumW * sumL2) - f(sumL * sumL));
    if (D > 0) {
      let thisScale = f(f(f(sumW * sumXL) - f(sumX * sumL)) / D);
      let thisMin = f(f(f(sumL2 * sumX) - f(sumL * sumXL)) / D);
      if (thisMin > 0) {
        thisMin = 0;
        thisScale = f(sumXL / sumL2);
      }
      let cur = 0;
      for (let i = 0; i < n; i++) cur = f(cur + f(w[i] * err(f(f(f(thisScale * aux[i]) + thisMin) - x[xo + i]))));
      if (cur < best) {
        for (let i = 0; i < n; i++) L[lo + i] = aux[i];
        best = cur;
        scale = thisScale;
        min = thisMin;
      }
    }
  }
  return { scale, min: -min };
}

/** The searches each quantizer runs (ggml's arguments). */
const Q2K_REF: FitOptions = { rmin: F_M0_5, rdelta: F_0_1, nstep: 15, useMad: true, qkx3: false };
const Q4K_REF: FitOptions = { rmin: -1, rdelta: F_0_1, nstep: 20, useMad: false, qkx3: false };
const IMATRIX_FIT: FitOptions = { rmin: F_M0_9, rdelta: F_0_05, nstep: 36, useMad: false, qkx3: true };

/**
 * make_qp_quants: one positive scale for n values on 0..nmax, weighted; L gets the levels. Also
 * the IQ2_XXS starting scale (ggml calls it there with nmax 4 on values of which one may be
 * negative). L is bytes as in C: a negative level is stored as 256 − l and read back so, which
 * changes the refinement's sums; the byte identity needs exactly that.
 */
export function makeQp(n: number, nmax: number, x: Float32Array, xo: number, L: Uint8Array, lo: number, qw: Float32Array, qo: number): number {
  let max = 0;
  for (let i = 0; i < n; i++) max = Math.max(max, x[xo + i]);
  if (max < GROUP_MAX_EPS) {
    for (let i = 0; i < n; i++) L[lo + i] = 0;
    return 0;
  }
  let iscale = f(nmax / max);
  for (let i = 0; i < n; i++) L[lo + i] = nearestInt(f(iscale * x[xo + i]));
  const scale = f(1 / iscale);
  let bestMse = 0;
  for (let i = 0; i < n; i++) {
    const diff = mad(-scale, L[lo + i], x[xo + i]);
    bestMse = mad(f(qw[qo + i] * diff), diff, bestMse);
  }
  for (let is = -4; is <= 4; is++) {
    if (is === 0) continue;
    const iscaleIs = f(mad(F_0_1, is, nmax) / max);
    const scaleIs = f(1 / iscaleIs);
    let mse = 0;
    for (let i = 0; i < n; i++) {
      const l = Math.min(nmax, nearestInt(f(iscaleIs * x[xo + i])));
      const diff = mad(-scaleIs, l, x[xo + i]);
      mse = mad(f(qw[qo + i] * diff), diff, mse);
    }
    if (mse < bestMse) {
      bestMse = mse;
      iscale = iscaleIs;
    }
  }
  let sumlx = 0, suml2 = 0;
  for (let i = 0; i < n; i++) {
    const l = Math.min(nmax, nearestInt(f(iscale * x[xo + i])));
    L[lo + i] = l;
    const w = qw[qo + i];
    sumlx = mad(f(w * x[xo + i]), l, sumlx);
    suml2 = mad(f(w * l), l, suml2);
  }
  for (let itry = 0; itry < 5; itry++) {
    let changed = 0;
    for (let i = 0; i < n; i++) {
      const w = qw[qo + i];
      const li = L[lo + i];
      let slx = mad(-f(w * x[xo + i]), li, sumlx);
      let sl2 = mad(-f(w * li), li, suml2);
      if (slx > 0 && sl2 > 0) {
        const nl = Math.min(nmax, nearestInt(f(f(x[xo + i] * sl2) / slx)));
        if (nl !== li) {
          slx = mad(f(w * x[xo + i]), nl, slx);
          sl2 = mad(f(w * nl), nl, sl2);
          if (f(f(slx * slx) * suml2) > f(f(sumlx * sumlx) * sl2)) {
            L[lo + i] = nl; sumlx = slx; suml2 = sl2;
            changed++;
          }
        }
      }
    }
    if (!changed) break;
  }
  return suml2 > 0 ? f(sumlx / suml2) : 0;
}

// ---------------------------------------------------------------- Q2_K

/** Packs 256 levels of 2 bits the way block_q2_K stores them (4 planes of 32 per 128). */
function pack2(L: Uint8Array, out: Uint8Array, qs: number): void {
  for (let j = 0; j < QK_K; j += 128)
    for (let l = 0; l < 32; l++)
      out[qs + j / 4 + l] = L[j + l] | (L[j + l + 32] << 2) | (L[j + l + 64] << 4) | (L[j + l + 96] << 6);
}

/** One row of Q2_K (84 bytes per 256: scales[16], qs[64], d, dmin); `qw` = the row's imatrix or null. */
export function quantizeQ2K(x: Float32Array, out: Uint8Array, qw: Float32Array | null): void {
  const nb = x.length / QK_K;
  const L = new Uint8Array(QK_K), aux = new Uint8Array(16), w = new Float32Array(16);
  const mins = new Float32Array(16), scales = new Float32Array(16), sw = new Float32Array(16);
  const Ls = new Uint8Array(16), Lm = new Uint8Array(16);
  for (let i = 0; i < nb; i++) {
    const xo = i * QK_K, o = i * 84;
    let dm: number, mm: number;
    if (qw) {
      sw.fill(0);
      const sigma2 = f(sumSquares(x, xo, QK_K) / QK_K);
      for (let j = 0; j < 16; j++) {
        for (let l = 0; l < 16; l++) w[l] = importance(qw[xo + 16 * j + l], sigma2, x[xo + 16 * j + l]);
        for (let l = 0; l < 16; l++) sw[j] = f(sw[j] + w[l]);
        const r = makeQkx(16, 3, x, xo + 16 * j, w, L, 16 * j, aux, IMATRIX_FIT);
        scales[j] = r.scale; mins[j] = r.min;
      }
      dm = makeQp(16, 15, scales, 0, Ls, 0, sw, 0);
      mm = makeQp(16, 15, mins, 0, Lm, 0, sw, 0);
      dm = putF16(out, o + 80, dm);
      mm = putF16(out, o + 82, mm);
      for (let j = 0; j < 16; j++) out[o + j] = Ls[j] | (Lm[j] << 4);
    } else {
      let maxScale = 0, maxMin = 0;
      for (let j = 0; j < 16; j++) {
        for (let l = 0; l < 16; l++) w[l] = Math.abs(x[xo + 16 * j + l]);
        const r = makeQkx(16, 3, x, xo + 16 * j, w, L, 16 * j, aux, Q2K_REF);
        scales[j] = r.scale; mins[j] = r.min;
        if (r.scale > maxScale) maxScale = r.scale;
        if (r.min > maxMin) maxMin = r.min;
      }
      if (maxScale > 0) {
        const iscale = f(15 / maxScale);
        for (let j = 0; j < 16; j++) out[o + j] = nearestInt(f(iscale * scales[j])) & 0xff;
        dm = putF16(out, o + 80, f(maxScale / 15));
      } else {
        for (let j = 0; j < 16; j++) out[o + j] = 0;
        dm = putF16(out, o + 80, 0);
      }
      if (maxMin > 0) {
        const iscale = f(15 / maxMin);
        for (let j = 0; j < 16; j++) out[o + j] |= (nearestInt(f(iscale * mins[j])) << 4) & 0xff;
        mm = putF16(out, o + 82, f(maxMin / 15));
      } else {
        mm = putF16(out, o + 82, 0);
      }
    }
    for (let j = 0; j < 16; j++) {
      const d = f(dm * (out[o + j] & 0xf));
      if (!d) continue;
      const m = f(mm * (out[o + j] >> 4));
      for (let ii = 0; ii < 16; ii++) {
        const l = nearestInt(f(f(x[xo + 16 * j + ii] + m) / d));
        L[16 * j + ii] = Math.max(0, Math.min(3, l));
      }
    }
    pack2(L, out, o + 16);
  }
}

// ---------------------------------------------------------------- Q4_K

/** The 12-byte 6-bit scale/min packing of Q4_K/Q5_K. */
function packScales4(Ls: Uint8Array, Lm: Uint8Array, out: Uint8Array, s: number): void {
  for (let j = 0; j < 12; j++) out[s + j] = 0;
  for (let j = 0; j < 8; j++) {
    const ls = Ls[j], lm = Lm[j];
    if (j < 4) {
      out[s + j] = ls;
      out[s + j + 4] = lm;
    } else {
      out[s + j + 4] = (ls & 0xf) | ((lm & 0xf) << 4);
      out[s + j - 4] |= (ls >> 4) << 6;
      out[s + j] |= (lm >> 4) << 6;
    }
  }
}

function scaleMin4(j: number, q: Uint8Array, s: number): [number, number] {
  if (j < 4) return [q[s + j] & 63, q[s + j + 4] & 63];
  return [(q[s + j + 4] & 0xf) | ((q[s + j - 4] >> 6) << 4), (q[s + j + 4] >> 4) | ((q[s + j] >> 6) << 4)];
}

/** One row of Q4_K (144 bytes per 256: d, dmin, scales[12], qs[128]); `qw` = the row's imatrix or null. */
export function quantizeQ4K(x: Float32Array, out: Uint8Array, qw: Float32Array | null): void {
  const nb = x.length / QK_K;
  const L = new Uint8Array(QK_K), aux = new Uint8Array(32), w = new Float32Array(32);
  const mins = new Float32Array(8), scales = new Float32Array(8), sw = new Float32Array(8);
  const Ls = new Uint8Array(8), Lm = new Uint8Array(8);
  for (let i = 0; i < nb; i++) {
    const xo = i * QK_K, o = i * 144;
    if (qw) {
      const sigma2 = f(f(2 * sumSquares(x, xo, QK_K)) / QK_K);
      for (let j = 0; j < 8; j++) {
        for (let l = 0; l < 32; l++) w[l] = importance(qw[xo + 32 * j + l], sigma2, x[xo + 32 * j + l]);
        let sumw = 0;
        for (let l = 0; l < 32; l++) sumw = f(sumw + w[l]);
        sw[j] = sumw;
        const r = makeQkx(32, 15, x, xo + 32 * j, w, L, 32 * j, aux, IMATRIX_FIT);
        scales[j] = r.scale; mins[j] = r.min;
      }
      const dBlock = makeQp(8, 63, scales, 0, Ls, 0, sw, 0);
      const mBlock = makeQp(8, 63, mins, 0, Lm, 0, sw, 0);
      packScales4(Ls, Lm, out, o + 4);
      putF16(out, o, dBlock);
      putF16(out, o + 2, mBlock);
    } else {
      let maxScale = 0, maxMin = 0;
      for (let j = 0; j < 8; j++) {
        const avx = f(Math.sqrt(f(sumSquares(x, xo + 32 * j, 32) / 32)));
        for (let l = 0; l < 32; l++) w[l] = f(avx + Math.abs(x[xo + 32 * j + l]));
        const r = makeQkx(32, 15, x, xo + 32 * j, w, L, 32 * j, aux, Q4K_REF);
        scales[j] = r.scale; mins[j] = r.min;
        if (r.scale > maxScale) maxScale = r.scale;
        if (r.min > maxMin) maxMin = r.min;
      }
      const invScale = maxScale > 0 ? f(63 / maxScale) : 0;
      const invMin = maxMin > 0 ? f(63 / maxMin) : 0;
      for (let j = 0; j < 8; j++) {
        // uint8_t then MIN(63, ·): nearest_int is non-negative here
        Ls[j] = Math.min(63, nearestInt(f(invScale * scales[j])) & 0xff);
        Lm[j] = Math.min(63, nearestInt(f(invMin * mins[j])) & 0xff);
      }
      packScales4(Ls, Lm, out, o + 4);
      putF16(out, o, f(maxScale / 63));
      putF16(out, o + 2, f(maxMin / 63));
    }
    const d0 = f16ToF32(out[o] | (out[o + 1] << 8)), m0 = f16ToF32(out[o + 2] | (out[o + 3] << 8));
    for (let j = 0; j < 8; j++) {
      const [sc, m] = scaleMin4(j, out, o + 4);
      const d = f(d0 * sc);
      if (!d) continue;
      const dm = f(m0 * m);
      for (let ii = 0; ii < 32; ii++) {
        const l = nearestInt(f(f(x[xo + 32 * j + ii] + dm) / d));
        L[32 * j + ii] = Math.max(0, Math.min(15, l));
      }
    }
    const qs = o + 16;
    for (let j = 0; j < QK_K; j += 64)
      for (let l = 0; l < 32; l++) out[qs + j / 2 + l] = L[j + l] | (L[j + l + 32] << 4);
  }
}
