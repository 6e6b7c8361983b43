// Batched dot products: one weight row against several activation rows. Each weight block is
// decoded once and reused for every activation row, and each row's arithmetic is performed in
// exactly the order of the single-row kernel in dot.ts — so a prefill chunk gives bit-identical
// results to token-by-token decode. Keep the two files in step.

import { f16 } from '../f16';
import { IQ2XXS_F32, SIGN_MASKS, SCRATCH, dot, dotF32, dotGenericBlock, hsum } from './dot';
import { scaleMinK4 } from './dequant';
import { T_F32, T_F16, T_BF16, T_Q8_0, T_Q2_K, T_Q4_K, T_IQ2_XXS, blockElems, blockBytes } from './types';

const TILE: i32 = 256; // activation rows per pass
const ACC: usize = memory.data(TILE * 32, 64); // per row: two v128 accumulators
const DEC: usize = memory.data(1024 + 64, 64); // decoded values of one block (≤ 256 f32)

// @ts-ignore: decorator
@inline function accA(j: i32): usize { return ACC + (<usize>j << 5); }
// @ts-ignore: decorator
@inline function accB(j: i32): usize { return ACC + (<usize>j << 5) + 16; }
// @ts-ignore: decorator
@inline function dec(k: i32): v128 { return v128.load(DEC + (<usize>k << 4)); }

function zeroAcc(nx: i32): void { memory.fill(ACC, 0, <usize>nx << 5); }

function q8_0(w: usize, x: usize, n: i32, nx: i32): void {
  const nb = n >> 5;
  for (let b = 0; b < nb; b++) {
    const q = w + <usize>(34 * b) + 2;
    for (let j4 = 0; j4 < 4; j4++) {
      const v = v128.load8x8_s(q + <usize>(j4 * 8));
      v128.store(DEC + <usize>(j4 * 32), f32x4.convert_i32x4_s(i32x4.extend_low_i16x8_s(v)));
      v128.store(DEC + <usize>(j4 * 32 + 16), f32x4.convert_i32x4_s(i32x4.extend_high_i16x8_s(v)));
    }
    const d = f32x4.splat(f16(load<u16>(w + <usize>(34 * b))));
    for (let j = 0; j < nx; j++) {
      const xo = x + (<usize>(j * n + 32 * b) << 2);
      let s = f32x4.splat(0);
      for (let k = 0; k < 8; k++) s = f32x4.add(s, f32x4.mul(dec(k), v128.load(xo + <usize>(k * 16))));
      v128.store(accA(j), f32x4.add(v128.load(accA(j)), f32x4.mul(s, d)));
    }
  }
}

function iq2_xxs(w: usize, x: usize, n: i32, nx: i32): void {
  const nb = n >> 8;
  for (let b = 0; b < nb; b++) {
    const blk = w + <usize>(66 * b);
    const d = f16(load<u16>(blk));
    for (let ib = 0; ib < 8; ib++) {
      const p = blk + 2 + <usize>(8 * ib);
      const aux = load<u32>(p + 4);
      for (let l = 0; l < 4; l++) {
        const g = IQ2XXS_F32 + (<usize>load<u8>(p + <usize>l) << 5);
        const m = SIGN_MASKS + (<usize>((aux >> (7 * l)) & 127) << 5);
        v128.store(DEC + <usize>(32 * l), v128.xor(v128.load(g), v128.load(m)));
        v128.store(DEC + <usize>(32 * l + 16), v128.xor(v128.load(g + 16), v128.load(m + 16)));
      }
      const db = f32x4.splat(d * (<f32>0.5 + <f32>(aux >> 28)) * <f32>0.25);
      for (let j = 0; j < nx; j++) {
        const xo = x + (<usize>(j * n + 256 * b + 32 * ib) << 2);
        let s = f32x4.splat(0);
        for (let k = 0; k < 8; k++) s = f32x4.add(s, f32x4.mul(dec(k), v128.load(xo + <usize>(k * 16))));
        v128.store(accA(j), f32x4.add(v128.load(accA(j)), f32x4.mul(s, db)));
      }
    }
  }
}

/** Stores the 16 unsigned bytes of q as 4 f32x4 at DEC + slot·64 (dot16u's conversion). */
// @ts-ignore: decorator
@inline function decode16u(q: v128, slot: i32): void {
  const lo = i16x8.extend_low_i8x16_u(q), hi = i16x8.extend_high_i8x16_u(q);
  const o = DEC + <usize>(slot * 64);
  v128.store(o, f32x4.convert_i32x4_u(i32x4.extend_low_i16x8_u(lo)));
  v128.store(o + 16, f32x4.convert_i32x4_u(i32x4.extend_high_i16x8_u(lo)));
  v128.store(o + 32, f32x4.convert_i32x4_u(i32x4.extend_low_i16x8_u(hi)));
  v128.store(o + 48, f32x4.convert_i32x4_u(i32x4.extend_high_i16x8_u(hi)));
}

/** dot16u with pre-decoded values (same multiply/add order). */
// @ts-ignore: decorator
@inline function dot16d(slot: i32, x: usize): v128 {
  const o = slot * 4;
  let s = f32x4.mul(dec(o), v128.load(x));
  s = f32x4.add(s, f32x4.mul(dec(o + 1), v128.load(x + 16)));
  s = f32x4.add(s, f32x4.mul(dec(o + 2), v128.load(x + 32)));
  return f32x4.add(s, f32x4.mul(dec(o + 3), v128.load(x + 48)));
}

// @ts-ignore: decorator
@inline function sum16(x: usize): v128 {
  return f32x4.add(f32x4.add(v128.load(x), v128.load(x + 16)), f32x4.add(v128.load(x + 32), v128.load(x + 48)));
}

function q2_k(w: usize, x: usize, n: i32, nx: i32): void {
  const three = i8x16.splat(3);
  const nb = n >> 8;
  for (let b = 0; b < nb; b++) {
    const blk = w + <usize>(84 * b);
    const d = f16(load<u16>(blk + 80)), dmin = f16(load<u16>(blk + 82));
    for (let h = 0; h < 2; h++) {
      const q0 = v128.load(blk + 16 + <usize>(32 * h)), q1 = v128.load(blk + 32 + <usize>(32 * h));
      for (let sg = 0; sg < 4; sg++) {
        const jj = 8 * h + 2 * sg;
        const sc0 = <u32>load<u8>(blk + <usize>jj), sc1 = <u32>load<u8>(blk + <usize>(jj + 1));
        decode16u(v128.and(i8x16.shr_u(q0, 2 * sg), three), 0);
        decode16u(v128.and(i8x16.shr_u(q1, 2 * sg), three), 1);
        const c0 = f32x4.splat(d * <f32>(sc0 & 0xf)), c1 = f32x4.splat(d * <f32>(sc1 & 0xf));
        const m0 = f32x4.splat(dmin * <f32>(sc0 >> 4)), m1 = f32x4.splat(dmin * <f32>(sc1 >> 4));
        for (let j = 0; j < nx; j++) {
          const xo = x + (<usize>(j * n + 256 * b + 128 * h + 32 * sg) << 2);
          const a0 = dot16d(0, xo), a1 = dot16d(1, xo + 64);
          v128.store(accA(j), f32x4.add(v128.load(accA(j)), f32x4.add(f32x4.mul(a0, c0), f32x4.mul(a1, c1))));
          v128.store(accB(j), f32x4.add(v128.load(accB(j)), f32x4.add(f32x4.mul(sum16(xo), m0), f32x4.mul(sum16(xo + 64), m1))));
        }
      }
    }
  }
}

function q4_k(w: usize, x: usize, n: i32, nx: i32): void {
  const low = i8x16.splat(0xf);
  const nb = n >> 8;
  for (let b = 0; b < nb; b++) {
    const blk = w + <usize>(144 * b);
    const d = f16(load<u16>(blk)), dmin = f16(load<u16>(blk + 2));
    for (let t = 0; t < 4; t++) {
      const smA = scaleMinK4(blk + 4, 2 * t), smB = scaleMinK4(blk + 4, 2 * t + 1);
      for (let c = 0; c < 2; c++) {
        const q = v128.load(blk + 16 + <usize>(32 * t + 16 * c));
        decode16u(v128.and(q, low), c); // slots 0,1: sub-block A
        decode16u(i8x16.shr_u(q, 4), 2 + c); // slots 2,3: sub-block B
      }
      const cA = f32x4.splat(d * <f32>(smA & 0xffff)), cB = f32x4.splat(d * <f32>(smB & 0xffff));
      const mA = f32x4.splat(dmin * <f32>(smA >> 16)), mB = f32x4.splat(dmin * <f32>(smB >> 16));
      for (let j = 0; j < nx; j++) {
        const xa = x + (<usize>(j * n + 256 * b + 64 * t) << 2), xb = xa + 128;
        let sa = f32x4.splat(0), sb = f32x4.splat(0);
        sa = f32x4.add(sa, dot16d(0, xa));
        sb = f32x4.add(sb, dot16d(2, xb));
        sa = f32x4.add(sa, dot16d(1, xa + 64));
        sb = f32x4.add(sb, dot16d(3, xb + 64));
        v128.store(accA(j), f32x4.add(v128.load(accA(j)), f32x4.add(f32x4.mul(sa, cA), f32x4.mul(sb, cB))));
        const xsA = f32x4.add(sum16(xa), sum16(xa + 64)), xsB = f32x4.add(sum16(xb), sum16(xb + 64));
        v128.store(accB(j), f32x4.add(v128.load(accB(j)), f32x4.add(f32x4.mul(xsA, mA), f32x4.mul(xsB, mB))));
      }
    }
  }
}

/** F16/BF16: decode 256 values at a time exactly as dotF16/dotBF16 do, single accumulator per row. */
function half(t: i32, w: usize, x: usize, n: i32, nx: i32): void {
  const mask = i32x4.splat(0x7fff), smask = i32x4.splat(0x8000), scale = f32x4.splat(reinterpret<f32>(0x77800000));
  const n4 = n & ~3;
  for (let i0 = 0; i0 < n4; i0 += 256) {
    const len = min(256, n4 - i0);
    for (let i = 0; i < len; i += 4) {
      const h = v128.load16x4_u(w + (<usize>(i0 + i) << 1));
      const v = t == T_F16
        ? v128.or(f32x4.mul(i32x4.shl(v128.and(h, mask), 13), scale), i32x4.shl(v128.and(h, smask), 16))
        : i32x4.shl(h, 16);
      v128.store(DEC + (<usize>i << 2), v);
    }
    for (let j = 0; j < nx; j++) {
      const xo = x + (<usize>(j * n + i0) << 2);
      let s = v128.load(accA(j));
      for (let i = 0; i < len; i += 4) s = f32x4.add(s, f32x4.mul(v128.load(DEC + (<usize>i << 2)), v128.load(xo + (<usize>i << 2))));
      v128.store(accA(j), s);
    }
  }
}

function generic(t: i32, w: usize, x: usize, n: i32, nx: i32): void {
  const be = blockElems(t), bb = <usize>blockBytes(t);
  for (let i = 0; i < n; i += be) {
    dotGenericBlock(t, w);
    for (let j = 0; j < nx; j++) {
      const p = accA(j);
      store<f32>(p, load<f32>(p) + dotF32(SCRATCH, x + (<usize>(j * n + i) << 2), be));
    }
    w += bb;
  }
}

/** Row finalisation, matching each single-row kernel's return expression. */
function finish(t: i32, w: usize, x: usize, n: i32, j: i32): f32 {
  switch (t) {
    case T_Q8_0: case T_IQ2_XXS: return hsum(v128.load(accA(j)));
    case T_Q2_K: case T_Q4_K: return hsum(f32x4.sub(v128.load(accA(j)), v128.load(accB(j))));
    case T_F16: case T_BF16: {
      let r = hsum(v128.load(accA(j)));
      const xo = x + (<usize>(j * n) << 2);
      for (let i = n & ~3; i < n; i++) r += (t == T_F16 ? f16(load<u16>(w + (<usize>i << 1))) : reinterpret<f32>(<u32>load<u16>(w + (<usize>i << 1)) << 16)) * load<f32>(xo + (<usize>i << 2));
      return r;
    }
    default: return load<f32>(accA(j));
  }
}

/**
 * y[j·yStride + r] = W[r]·x_j for rows r < rows and activation rows j < nx (x_j = x + j·n floats).
 * Bit-identical to calling dot() for every (r, j).
 */
export function matmulExact(t: i32, w: usize, rowBytes: usize, rows: i32, x: usize, n: i32, nx: i32, y: usize, yStride: i32): void {
  for (let r = 0; r < rows; r++) {
    const row = w + <usize>r * rowBytes;
    for (let j0 = 0; j0 < nx; j0 += TILE) {
      const m = min(TILE, nx - j0);
      const xs = x + (<usize>(j0 * n) << 2);
      if (t == T_F32) {
        for (let j = 0; j < m; j++) store<f32>(y + (<usize>((j0 + j) * yStride + r) << 2), dot(t, row, xs + (<usize>(j * n) << 2), n));
        continue;
      }
      zeroAcc(m);
      switch (t) {
        case T_Q8_0: q8_0(row, xs, n, m); break;
        case T_IQ2_XXS: iq2_xxs(row, xs, n, m); break;
        case T_Q2_K: q2_k(row, xs, n, m); break;
        case T_Q4_K: q4_k(row, xs, n, m); break;
        case T_F16: case T_BF16: half(t, row, xs, n, m); break;
        default: generic(t, row, xs, n, m);
      }
      for (let j = 0; j < m; j++) store<f32>(y + (<usize>((j0 + j) * yStride + r) << 2), finish(t, row, xs, n, j));
    }
  }
}
