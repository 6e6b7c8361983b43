// Whole-row and whole-tensor operations built on the block kernels: dequantize a row, matvec
// (decode: one activation vector), matmul (prefill: several activation rows per weight pass, so
// each weight block is decoded once and reused), and the KV-cache quantizers.

import { f16, bf16, f32ToF16 } from '../f16';
import { dequantBlock } from './dequant';
import { dot, dotScalarPath } from './dot';
import { matmulExact } from './batch';
import { T_F32, T_F16, T_BF16, T_Q8_0, T_Q4_0, blockElems, blockBytes } from './types';

/** Decodes n elements (whole blocks) of type t at src into f32 at dst. */
export function dequantRow(t: i32, src: usize, dst: usize, n: i32): void {
  if (t == T_F32) { memory.copy(dst, src, <usize>n << 2); return; }
  if (t == T_F16) { for (let i = 0; i < n; i++) store<f32>(dst + (<usize>i << 2), f16(load<u16>(src + (<usize>i << 1)))); return; }
  if (t == T_BF16) { for (let i = 0; i < n; i++) store<f32>(dst + (<usize>i << 2), bf16(load<u16>(src + (<usize>i << 1)))); return; }
  const be = blockElems(t), bb = <usize>blockBytes(t);
  for (let i = 0; i < n; i += be) {
    dequantBlock(t, src, dst + (<usize>i << 2));
    src += bb;
  }
}

/** y[r] = W[r]·x for rows r in [0, rows); W rows are rowBytes apart. */
export function matvec(t: i32, w: usize, rowBytes: usize, rows: i32, x: usize, n: i32, y: usize): void {
  for (let r = 0; r < rows; r++) store<f32>(y + (<usize>r << 2), dot(t, w + <usize>r * rowBytes, x, n));
}

/** matvec through the scalar reference path (benchmarks: SIMD vs scalar). */
export function matvecScalar(t: i32, w: usize, rowBytes: usize, rows: i32, x: usize, n: i32, y: usize): void {
  for (let r = 0; r < rows; r++) store<f32>(y + (<usize>r << 2), dotScalarPath(t, w + <usize>r * rowBytes, x, n));
}

/**
 * Batched: y[j·yStride + r] = W[r]·x_j for nx activation rows x_j = x + j·n floats. Each weight
 * block is decoded once per chunk of activation rows, and every output equals dot() bit for bit.
 */
export function matmul(t: i32, w: usize, rowBytes: usize, rows: i32, x: usize, n: i32, nx: i32, y: usize, yStride: i32): void {
  if (nx == 1) { matvec(t, w, rowBytes, rows, x, n, y); return; }
  matmulExact(t, w, rowBytes, rows, x, n, nx, y, yStride);
}

/** C roundf: round half away from zero (the Q8_0 reference quantizer uses it). */
// @ts-ignore: decorator
@inline function roundAway(v: f32): f32 {
  const t = Mathf.trunc(v);
  return Mathf.abs(v - t) >= <f32>0.5 ? t + Mathf.sign(v) : t;
}

/** Q8_0 reference quantizer (quantize_row_q8_0_ref): d = amax/127, q = roundf(x/d). */
function quantQ8_0(src: usize, dst: usize, n: i32): void {
  for (let b = 0; b < n; b += 32) {
    let amax: f32 = 0;
    for (let j = 0; j < 32; j++) amax = max(amax, Mathf.abs(load<f32>(src + (<usize>(b + j) << 2))));
    const d = amax / <f32>127;
    const id: f32 = d != 0 ? <f32>1 / d : 0;
    store<u16>(dst, <u16>f32ToF16(d));
    for (let j = 0; j < 32; j++) store<i8>(dst + 2 + <usize>j, <i8><i32>roundAway(load<f32>(src + (<usize>(b + j) << 2)) * id));
    dst += 34;
  }
}

/** Q4_0 reference quantizer (quantize_row_q4_0_ref): d = max/−8, q = min(15, trunc(x/d + 8.5)). */
function quantQ4_0(src: usize, dst: usize, n: i32): void {
  for (let b = 0; b < n; b += 32) {
    let amax: f32 = 0, mx: f32 = 0;
    for (let j = 0; j < 32; j++) {
      const v = load<f32>(src + (<usize>(b + j) << 2));
      if (Mathf.abs(v) > amax) { amax = Mathf.abs(v); mx = v; }
    }
    const d = mx / <f32>-8;
    const id: f32 = d != 0 ? <f32>1 / d : 0;
    store<u16>(dst, <u16>f32ToF16(d));
    for (let j = 0; j < 16; j++) {
      const x0 = load<f32>(src + (<usize>(b + j) << 2)) * id;
      const x1 = load<f32>(src + (<usize>(b + j + 16) << 2)) * id;
      const q0 = min<i32>(15, <i32><i8>(x0 + <f32>8.5));
      const q1 = min<i32>(15, <i32><i8>(x1 + <f32>8.5));
      store<u8>(dst + 2 + <usize>j, <u8>(q0 | (q1 << 4)));
    }
    dst += 18;
  }
}

/** Quantizes n f32 values to type t (F32, F16, Q8_0, Q4_0: the KV-cache row types). Returns 0, or −1 for an unsupported type. */
export function quantizeRow(t: i32, src: usize, dst: usize, n: i32): i32 {
  switch (t) {
    case T_F32: memory.copy(dst, src, <usize>n << 2); return 0;
    case T_F16: for (let i = 0; i < n; i++) store<u16>(dst + (<usize>i << 1), <u16>f32ToF16(load<f32>(src + (<usize>i << 2)))); return 0;
    case T_Q8_0: quantQ8_0(src, dst, n); return 0;
    case T_Q4_0: quantQ4_0(src, dst, n); return 0;
    default: return -1;
  }
}
