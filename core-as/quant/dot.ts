// Dot products of a quantized weight row with f32 activations, accumulated in f32.
// Hot types (the q2 recipe and its neighbours: Q8_0, Q2_K, IQ2_XXS, Q4_K, F16, BF16, F32) have
// v128 kernels that decode in registers; the rest decode a block into a scratch buffer first.
// Accuracy contract: |dot − exact| ≤ ~1e-6 · Σ|w·x| (per-block partial sums keep error growth low).

import { f16 } from '../f16';
import { GRID_BLOB, GRID_BLOB_BYTES, IQ2XXS_GRID, KSIGNS_IQ2XS } from '../generated/tables';
import { dequantBlock, scaleMinK4 } from './dequant';
import { T_F32, T_F16, T_BF16, T_Q8_0, T_Q2_K, T_Q4_K, T_IQ2_XXS, blockElems, blockBytes } from './types';

// Scratch for one decoded block (256 f32).
export const SCRATCH: usize = memory.data(256 * 4, 64);

// IQ2_XXS grid as f32 (256 entries × 8 magnitudes) and sign masks (128 patterns × 8 lanes of
// 0 or 0x80000000): a group of 8 weights is then two table loads and two XORs.
export const IQ2XXS_F32: usize = memory.data(256 * 8 * 4, 64);
export const SIGN_MASKS: usize = memory.data(128 * 8 * 4, 64);

// Grid ⊕ signs precombined: 256 grid entries × 128 sign patterns × 8 f32 (1 MiB). One group of
// 8 weights is then two table loads; values are bit-identical to (grid ⊕ sign mask).
const IQ2XXS_SIGNED: usize = memory.data(256 * 128 * 32, 64);
const IQ2_SCALE: usize = memory.data<f32>([0.125, 0.375, 0.625, 0.875, 1.125, 1.375, 1.625, 1.875, 2.125, 2.375, 2.625, 2.875, 3.125, 3.375, 3.625, 3.875]);

function buildTables(): void {
  for (let g = 0; g < 256; g++) {
    for (let k = 0; k < 8; k++) store<f32>(IQ2XXS_F32 + (<usize>(g * 8 + k) << 2), <f32>load<u8>(IQ2XXS_GRID + <usize>(g * 8 + k)));
  }
  for (let s = 0; s < 128; s++) {
    const m = <u32>load<u8>(KSIGNS_IQ2XS + <usize>s);
    for (let k = 0; k < 8; k++) store<u32>(SIGN_MASKS + (<usize>(s * 8 + k) << 2), (m >> k) & 1 ? 0x80000000 : 0);
  }
  for (let g = 0; g < 256; g++) {
    for (let s = 0; s < 128; s++) {
      const dst = IQ2XXS_SIGNED + (<usize>((g << 7) | s) << 5);
      v128.store(dst, v128.xor(v128.load(IQ2XXS_F32 + (<usize>g << 5)), v128.load(SIGN_MASKS + (<usize>s << 5))));
      v128.store(dst, v128.xor(v128.load(IQ2XXS_F32 + (<usize>g << 5), 16), v128.load(SIGN_MASKS + (<usize>s << 5), 16)), 16);
    }
  }
}
buildTables();

// @ts-ignore: decorator
@inline export function hsum(v: v128): f32 {
  return f32x4.extract_lane(v, 0) + f32x4.extract_lane(v, 1) + f32x4.extract_lane(v, 2) + f32x4.extract_lane(v, 3);
}

/** Σ a[i]·b[i] over n f32 values (n multiple of 4), 4 independent lanes × 2 accumulators. */
export function dotF32(a: usize, b: usize, n: i32): f32 {
  let s0 = f32x4.splat(0), s1 = f32x4.splat(0);
  let i = 0;
  for (; i + 8 <= n; i += 8) {
    const o = <usize>i << 2;
    s0 = f32x4.add(s0, f32x4.mul(v128.load(a + o), v128.load(b + o)));
    s1 = f32x4.add(s1, f32x4.mul(v128.load(a + o + 16), v128.load(b + o + 16)));
  }
  let s = hsum(f32x4.add(s0, s1));
  for (; i < n; i++) s += load<f32>(a + (<usize>i << 2)) * load<f32>(b + (<usize>i << 2));
  return s;
}

function dotF16(w: usize, x: usize, n: i32): f32 {
  const mask = i32x4.splat(0x7fff), smask = i32x4.splat(0x8000), scale = f32x4.splat(reinterpret<f32>(0x77800000)); // 2^112
  let s = f32x4.splat(0);
  let i = 0;
  for (; i + 4 <= n; i += 4) {
    const h = v128.load16x4_u(w + (<usize>i << 1));
    // half bits shifted into f32 position are the value × 2^-112 (normals and subnormals alike)
    const mag = f32x4.mul(i32x4.shl(v128.and(h, mask), 13), scale);
    const v = v128.or(mag, i32x4.shl(v128.and(h, smask), 16));
    s = f32x4.add(s, f32x4.mul(v, v128.load(x + (<usize>i << 2))));
  }
  let r = hsum(s);
  for (; i < n; i++) r += f16(load<u16>(w + (<usize>i << 1))) * load<f32>(x + (<usize>i << 2));
  return r;
}

function dotBF16(w: usize, x: usize, n: i32): f32 {
  let s = f32x4.splat(0);
  let i = 0;
  for (; i + 4 <= n; i += 4) {
    const v = i32x4.shl(v128.load16x4_u(w + (<usize>i << 1)), 16);
    s = f32x4.add(s, f32x4.mul(v, v128.load(x + (<usize>i << 2))));
  }
  let r = hsum(s);
  for (; i < n; i++) r += reinterpret<f32>(<u32>load<u16>(w + (<usize>i << 1)) << 16) * load<f32>(x + (<usize>i << 2));
  return r;
}

function dotQ8_0(w: usize, x: usize, nb: i32): f32 {
  let acc = f32x4.splat(0);
  for (let b = 0; b < nb; b++) {
    const q = w + 2;
    let s = f32x4.splat(0);
    for (let j = 0; j < 4; j++) {
      const v = v128.load8x8_s(q + <usize>(j * 8));
      const xo = x + <usize>(j * 32);
      s = f32x4.add(s, f32x4.mul(f32x4.convert_i32x4_s(i32x4.extend_low_i16x8_s(v)), v128.load(xo)));
      s = f32x4.add(s, f32x4.mul(f32x4.convert_i32x4_s(i32x4.extend_high_i16x8_s(v)), v128.load(xo + 16)));
    }
    acc = f32x4.add(acc, f32x4.mul(s, f32x4.splat(f16(load<u16>(w)))));
    w += 34;
    x += 128;
  }
  return hsum(acc);
}

/** 16 unsigned bytes (values < 256) · 16 f32 at x; also returns Σx through the out-pointer trick. */
// @ts-ignore: decorator
@inline function dot16u(q: v128, x: usize): v128 {
  const lo = i16x8.extend_low_i8x16_u(q), hi = i16x8.extend_high_i8x16_u(q);
  let s = f32x4.mul(f32x4.convert_i32x4_u(i32x4.extend_low_i16x8_u(lo)), v128.load(x));
  s = f32x4.add(s, f32x4.mul(f32x4.convert_i32x4_u(i32x4.extend_high_i16x8_u(lo)), v128.load(x + 16)));
  s = f32x4.add(s, f32x4.mul(f32x4.convert_i32x4_u(i32x4.extend_low_i16x8_u(hi)), v128.load(x + 32)));
  return f32x4.add(s, f32x4.mul(f32x4.convert_i32x4_u(i32x4.extend_high_i16x8_u(hi)), v128.load(x + 48)));
}

// @ts-ignore: decorator
@inline function sum16(x: usize): v128 {
  return f32x4.add(f32x4.add(v128.load(x), v128.load(x + 16)), f32x4.add(v128.load(x + 32), v128.load(x + 48)));
}

function dotQ2_K(w: usize, x: usize, nb: i32): f32 {
  const three = i8x16.splat(3);
  let accQ = f32x4.splat(0), accM = f32x4.splat(0);
  for (let b = 0; b < nb; b++) {
    const d = f16(load<u16>(w + 80)), dmin = f16(load<u16>(w + 82));
    for (let h = 0; h < 2; h++) {
      const q0 = v128.load(w + 16 + <usize>(32 * h)), q1 = v128.load(w + 32 + <usize>(32 * h));
      for (let sg = 0; sg < 4; sg++) {
        const j = 8 * h + 2 * sg;
        const xo = x + (<usize>(128 * h + 32 * sg) << 2);
        const sc0 = <u32>load<u8>(w + <usize>j), sc1 = <u32>load<u8>(w + <usize>(j + 1));
        const a0 = dot16u(v128.and(i8x16.shr_u(q0, 2 * sg), three), xo);
        const a1 = dot16u(v128.and(i8x16.shr_u(q1, 2 * sg), three), xo + 64);
        accQ = f32x4.add(accQ, f32x4.add(f32x4.mul(a0, f32x4.splat(d * <f32>(sc0 & 0xf))), f32x4.mul(a1, f32x4.splat(d * <f32>(sc1 & 0xf)))));
        accM = f32x4.add(accM, f32x4.add(f32x4.mul(sum16(xo), f32x4.splat(dmin * <f32>(sc0 >> 4))), f32x4.mul(sum16(xo + 64), f32x4.splat(dmin * <f32>(sc1 >> 4)))));
      }
    }
    w += 84;
    x += 1024;
  }
  return hsum(f32x4.sub(accQ, accM));
}

function dotQ4_K(w: usize, x: usize, nb: i32): f32 {
  const low = i8x16.splat(0xf);
  let accQ = f32x4.splat(0), accM = f32x4.splat(0);
  for (let b = 0; b < nb; b++) {
    const d = f16(load<u16>(w)), dmin = f16(load<u16>(w + 2));
    for (let t = 0; t < 4; t++) {
      const smA = scaleMinK4(w + 4, 2 * t), smB = scaleMinK4(w + 4, 2 * t + 1);
      const xa = x + (<usize>(64 * t) << 2), xb = xa + 128;
      let sa = f32x4.splat(0), sb = f32x4.splat(0);
      for (let c = 0; c < 2; c++) {
        const q = v128.load(w + 16 + <usize>(32 * t + 16 * c));
        sa = f32x4.add(sa, dot16u(v128.and(q, low), xa + <usize>(64 * c)));
        sb = f32x4.add(sb, dot16u(i8x16.shr_u(q, 4), xb + <usize>(64 * c)));
      }
      accQ = f32x4.add(accQ, f32x4.add(f32x4.mul(sa, f32x4.splat(d * <f32>(smA & 0xffff))), f32x4.mul(sb, f32x4.splat(d * <f32>(smB & 0xffff)))));
      const xsA = f32x4.add(sum16(xa), sum16(xa + 64)), xsB = f32x4.add(sum16(xb), sum16(xb + 64));
      accM = f32x4.add(accM, f32x4.add(f32x4.mul(xsA, f32x4.splat(dmin * <f32>(smA >> 16))), f32x4.mul(xsB, f32x4.splat(dmin * <f32>(smB >> 16)))));
    }
    w += 144;
    x += 1024;
  }
  return hsum(f32x4.sub(accQ, accM));
}

/** Σ over one 32-weight sub-block: four groups of 8 from the precombined signed-grid table, in order. */
// @ts-ignore: decorator
@inline function iq2Sub(p: usize, aux: u32, xo: usize): v128 {
  const gi = load<u32>(p);
  // table row = (grid index << 7 | sign index) × 32 bytes
  const t0 = IQ2XXS_SIGNED + (<usize>(((gi & 0xff) << 7) | (aux & 127)) << 5);
  const t1 = IQ2XXS_SIGNED + (<usize>(((gi >> 1) & 0x7f80) | ((aux >> 7) & 127)) << 5);
  const t2 = IQ2XXS_SIGNED + (<usize>(((gi >> 9) & 0x7f80) | ((aux >> 14) & 127)) << 5);
  const t3 = IQ2XXS_SIGNED + (<usize>(((gi >> 17) & 0x7f80) | ((aux >> 21) & 127)) << 5);
  let s = f32x4.splat(0);
  s = f32x4.add(s, f32x4.mul(v128.load(t0), v128.load(xo)));
  s = f32x4.add(s, f32x4.mul(v128.load(t0, 16), v128.load(xo, 16)));
  s = f32x4.add(s, f32x4.mul(v128.load(t1), v128.load(xo, 32)));
  s = f32x4.add(s, f32x4.mul(v128.load(t1, 16), v128.load(xo, 48)));
  s = f32x4.add(s, f32x4.mul(v128.load(t2), v128.load(xo, 64)));
  s = f32x4.add(s, f32x4.mul(v128.load(t2, 16), v128.load(xo, 80)));
  s = f32x4.add(s, f32x4.mul(v128.load(t3), v128.load(xo, 96)));
  return f32x4.add(s, f32x4.mul(v128.load(t3, 16), v128.load(xo, 112)));
}

function dotIQ2_XXS(w: usize, x: usize, nb: i32): f32 {
  let acc = f32x4.splat(0);
  for (let b = 0; b < nb; b++) {
    const d = f16(load<u16>(w));
    for (let ib = 0; ib < 8; ib++) {
      const p = w + 2 + <usize>(8 * ib);
      const aux = load<u32>(p + 4);
      const s = iq2Sub(p, aux, x + (<usize>(32 * ib) << 2));
      // (0.5 + ls)·0.25 is exact, so d·table[ls] equals d·(0.5 + ls)·0.25 bit for bit
      acc = f32x4.add(acc, f32x4.mul(s, f32x4.splat(d * load<f32>(IQ2_SCALE + (<usize>(aux >> 28) << 2)))));
    }
    w += 66;
    x += 1024;
  }
  return hsum(acc);
}

/** Decodes one block of a generic-path type into SCRATCH (shared with the batched kernel). */
export function dotGenericBlock(t: i32, w: usize): void {
  dequantBlock(t, w, SCRATCH);
}

/** Any supported type: decode each block to scratch, then an f32 dot. */
function dotGeneric(t: i32, w: usize, x: usize, n: i32): f32 {
  const be = blockElems(t), bb = <usize>blockBytes(t);
  let s: f32 = 0;
  for (let i = 0; i < n; i += be) {
    dequantBlock(t, w, SCRATCH);
    s += dotF32(SCRATCH, x + (<usize>i << 2), be);
    w += bb;
  }
  return s;
}

/** Dot of one weight row (n elements of type t at w) with n f32 at x. n must be a whole number of blocks. */
export function dot(t: i32, w: usize, x: usize, n: i32): f32 {
  switch (t) {
    case T_F32: return dotF32(w, x, n);
    case T_F16: return dotF16(w, x, n);
    case T_BF16: return dotBF16(w, x, n);
    case T_Q8_0: return dotQ8_0(w, x, n >> 5);
    case T_Q2_K: return dotQ2_K(w, x, n >> 8);
    case T_Q4_K: return dotQ4_K(w, x, n >> 8);
    case T_IQ2_XXS: return dotIQ2_XXS(w, x, n >> 8);
    default: return dotGeneric(t, w, x, n);
  }
}

/**
 * The scalar reference path: decode each block with the scalar decoder, then a plain scalar loop.
 * No v128 anywhere; tests check it agrees with dot(), the benchmark reports the SIMD speed-up.
 */
export function dotScalarPath(t: i32, w: usize, x: usize, n: i32): f32 {
  const be = blockElems(t), bb = <usize>blockBytes(t);
  let s: f32 = 0;
  for (let i = 0; i < n; i += be) {
    dequantBlock(t, w, SCRATCH);
    let bs: f32 = 0;
    for (let k = 0; k < be; k++) bs += load<f32>(SCRATCH + (<usize>k << 2)) * load<f32>(x + (<usize>(i + k) << 2));
    s += bs;
    w += bb;
  }
  return s;
}

/** Address of the decoders' table blob (scripts/build/gen-tables.mjs): the Vulkan engine's GRID binding. */
export function gridBlobPtr(): usize {
  return GRID_BLOB;
}

export function gridBlobBytes(): i32 {
  return GRID_BLOB_BYTES;
}
