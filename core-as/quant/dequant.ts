// Block decoders: one function per ggml type, one block → f32 values. Formulas follow
// quant-spec §3 element by element, in the same operation order as ggml's reference
// dequantizers, so every value is bit-identical to theirs (the tests compare exactly).

import { f16, bf16 } from '../f16';
import { IQ1S_GRID, IQ2S_GRID, IQ2XXS_GRID, IQ2XS_GRID, IQ3S_GRID, IQ3XXS_GRID, KSIGNS_IQ2XS, KVALUES_IQ4NL } from '../generated/tables';
import {
  T_F32, T_F16, T_BF16, T_Q4_0, T_Q4_1, T_Q5_0, T_Q5_1, T_Q8_0, T_Q2_K, T_Q3_K, T_Q4_K, T_Q5_K,
  T_Q6_K, T_IQ2_XXS, T_IQ2_XS, T_IQ3_XXS, T_IQ4_NL, T_IQ4_XS, T_IQ2_S, T_IQ3_S, T_IQ1_S, T_IQ1_M,
} from './types';

// @ts-ignore: decorator
@inline function byte(p: usize): u32 { return <u32>load<u8>(p); }
// @ts-ignore: decorator
@inline function put(dst: usize, e: i32, v: f32): void { store<f32>(dst + (<usize>e << 2), v); }

/** 4-bit nibble e of a 32-element Q4_0-style block: low nibbles are 0..15, high are 16..31. */
// @ts-ignore: decorator
@inline function nibble(qs: usize, e: i32): u32 {
  return e < 16 ? byte(qs + e) & 0xf : byte(qs + e - 16) >> 4;
}

function deqQ8_0(s: usize, d: usize): void {
  const sc = f16(load<u16>(s));
  for (let e = 0; e < 32; e++) put(d, e, sc * <f32>load<i8>(s + 2 + e));
}

function deqQ4_0(s: usize, d: usize): void {
  const sc = f16(load<u16>(s));
  for (let e = 0; e < 32; e++) put(d, e, sc * <f32>(<i32>nibble(s + 2, e) - 8));
}

function deqQ4_1(s: usize, d: usize): void {
  const sc = f16(load<u16>(s)), m = f16(load<u16>(s + 2));
  for (let e = 0; e < 32; e++) put(d, e, <f32>nibble(s + 4, e) * sc + m);
}

function deqQ5_0(s: usize, d: usize): void {
  const sc = f16(load<u16>(s));
  const qh = load<u32>(s + 2);
  for (let e = 0; e < 32; e++) {
    const q = nibble(s + 6, e) | (((qh >> e) & 1) << 4);
    put(d, e, sc * <f32>(<i32>q - 16));
  }
}

function deqQ5_1(s: usize, d: usize): void {
  const sc = f16(load<u16>(s)), m = f16(load<u16>(s + 2));
  const qh = load<u32>(s + 4);
  for (let e = 0; e < 32; e++) {
    const q = nibble(s + 8, e) | (((qh >> e) & 1) << 4);
    put(d, e, <f32>q * sc + m);
  }
}

function deqQ2_K(s: usize, d: usize): void {
  const dd = f16(load<u16>(s + 80)), dmin = f16(load<u16>(s + 82));
  for (let e = 0; e < 256; e++) {
    const h = e >> 7;
    const shift = 2 * ((e & 127) >> 5);
    const q = (byte(s + 16 + 32 * h + (e & 31)) >> shift) & 3;
    const sc = byte(s + (e >> 4));
    const dl = dd * <f32>(sc & 0xf), ml = dmin * <f32>(sc >> 4);
    put(d, e, dl * <f32>q - ml);
  }
}

function deqQ3_K(s: usize, d: usize): void {
  const dd = f16(load<u16>(s + 108));
  const B = s + 96;
  for (let e = 0; e < 256; e++) {
    const h = e >> 7;
    const shift = 2 * ((e & 127) >> 5);
    const q2 = (byte(s + 32 + 32 * h + (e & 31)) >> shift) & 3;
    const hb = (byte(s + (e & 31)) >> (e >> 5)) & 1;
    const j = e >> 4;
    const lo4 = j < 8 ? byte(B + j) & 0xf : byte(B + j - 8) >> 4;
    const hi2 = (byte(B + 8 + (j & 3)) >> (2 * (j >> 2))) & 3;
    const sc = <i32>(lo4 | (hi2 << 4)) - 32;
    put(d, e, (dd * <f32>sc) * <f32>(<i32>q2 - (hb != 0 ? 0 : 4)));
  }
}

/** 6-bit scale (low 16 bits) and min (high 16 bits) of sub-block j in Q4_K/Q5_K (quant-spec §3.5). */
// @ts-ignore: decorator
@inline export function scaleMinK4(q: usize, j: i32): u32 {
  let sc: u32, m: u32;
  if (j < 4) {
    sc = byte(q + j) & 63;
    m = byte(q + j + 4) & 63;
  } else {
    sc = (byte(q + j + 4) & 0xf) | ((byte(q + j - 4) >> 6) << 4);
    m = (byte(q + j + 4) >> 4) | ((byte(q + j) >> 6) << 4);
  }
  return sc | (m << 16);
}

function deqQ4_K(s: usize, d: usize): void {
  const dd = f16(load<u16>(s)), dmin = f16(load<u16>(s + 2));
  for (let sb = 0; sb < 8; sb++) {
    const sm = scaleMinK4(s + 4, sb);
    const dl = dd * <f32>(sm & 0xffff), ml = dmin * <f32>(sm >> 16);
    const qs = s + 16 + 32 * (sb >> 1);
    const sh = 4 * (sb & 1);
    for (let l = 0; l < 32; l++) put(d, sb * 32 + l, dl * <f32>((byte(qs + l) >> sh) & 0xf) - ml);
  }
}

function deqQ5_K(s: usize, d: usize): void {
  const dd = f16(load<u16>(s)), dmin = f16(load<u16>(s + 2));
  for (let sb = 0; sb < 8; sb++) {
    const sm = scaleMinK4(s + 4, sb);
    const dl = dd * <f32>(sm & 0xffff), ml = dmin * <f32>(sm >> 16);
    const qs = s + 48 + 32 * (sb >> 1);
    const sh = 4 * (sb & 1);
    for (let l = 0; l < 32; l++) {
      const q = ((byte(qs + l) >> sh) & 0xf) | (((byte(s + 16 + l) >> sb) & 1) << 4);
      put(d, sb * 32 + l, dl * <f32>q - ml);
    }
  }
}

function deqQ6_K(s: usize, d: usize): void {
  const dd = f16(load<u16>(s + 208));
  for (let e = 0; e < 256; e++) {
    const h = e >> 7, k = (e & 127) >> 5, l = e & 31;
    const lo = (byte(s + 64 * h + 32 * (k & 1) + l) >> (4 * (k >> 1))) & 0xf;
    const hi = (byte(s + 128 + 32 * h + l) >> (2 * k)) & 3;
    const q = <i32>(lo | (hi << 4)) - 32;
    put(d, e, (dd * <f32>load<i8>(s + 192 + (e >> 4))) * <f32>q);
  }
}

function deqIQ2_XXS(s: usize, d: usize): void {
  const dd = f16(load<u16>(s));
  for (let ib = 0; ib < 8; ib++) {
    const p = s + 2 + 8 * ib;
    const w = load<u32>(p + 4);
    const db = dd * (<f32>0.5 + <f32>(w >> 28)) * <f32>0.25;
    for (let l = 0; l < 4; l++) {
      const signs = byte(KSIGNS_IQ2XS + ((w >> (7 * l)) & 127));
      const grid = IQ2XXS_GRID + (<usize>byte(p + l) << 3);
      for (let k = 0; k < 8; k++) {
        const v = db * <f32>byte(grid + k);
        put(d, 32 * ib + 8 * l + k, (signs >> k) & 1 ? -v : v);
      }
    }
  }
}

function deqIQ2_XS(s: usize, d: usize): void {
  const dd = f16(load<u16>(s));
  for (let ib = 0; ib < 8; ib++) {
    const scb = byte(s + 66 + ib);
    for (let l = 0; l < 4; l++) {
      const v16 = <u32>load<u16>(s + 2 + 2 * (4 * ib + l));
      const nib = l < 2 ? scb & 0xf : scb >> 4;
      const db = dd * (<f32>0.5 + <f32>nib) * <f32>0.25;
      const signs = byte(KSIGNS_IQ2XS + (v16 >> 9));
      const grid = IQ2XS_GRID + (<usize>(v16 & 511) << 3);
      for (let k = 0; k < 8; k++) {
        const v = db * <f32>byte(grid + k);
        put(d, 32 * ib + 8 * l + k, (signs >> k) & 1 ? -v : v);
      }
    }
  }
}

function deqIQ3_XXS(s: usize, d: usize): void {
  const dd = f16(load<u16>(s));
  for (let ib = 0; ib < 8; ib++) {
    const w = load<u32>(s + 66 + 4 * ib);
    const db = dd * (<f32>0.5 + <f32>(w >> 28)) * <f32>0.5;
    for (let l = 0; l < 4; l++) {
      const signs = byte(KSIGNS_IQ2XS + ((w >> (7 * l)) & 127));
      const g0 = IQ3XXS_GRID + (<usize>byte(s + 2 + 8 * ib + 2 * l) << 2);
      const g1 = IQ3XXS_GRID + (<usize>byte(s + 2 + 8 * ib + 2 * l + 1) << 2);
      for (let k = 0; k < 8; k++) {
        const mag = k < 4 ? byte(g0 + k) : byte(g1 + k - 4);
        const v = db * <f32>mag;
        put(d, 32 * ib + 8 * l + k, (signs >> k) & 1 ? -v : v);
      }
    }
  }
}

function deqIQ4_NL(s: usize, d: usize): void {
  const sc = f16(load<u16>(s));
  for (let e = 0; e < 32; e++) put(d, e, sc * <f32>load<i8>(KVALUES_IQ4NL + nibble(s + 2, e)));
}

function deqIQ4_XS(s: usize, d: usize): void {
  const dd = f16(load<u16>(s));
  const sh = <u32>load<u16>(s + 2);
  for (let ib = 0; ib < 8; ib++) {
    const ls = ((byte(s + 4 + (ib >> 1)) >> (4 * (ib & 1))) & 0xf) | (((sh >> (2 * ib)) & 3) << 4);
    const dl = dd * <f32>(<i32>ls - 32);
    for (let e = 0; e < 32; e++) put(d, 32 * ib + e, dl * <f32>load<i8>(KVALUES_IQ4NL + nibble(s + 8 + 16 * ib, e)));
  }
}

// IQ2_S (82 bytes): f16 d @0, qs[64] @2 (32 grid low bytes, then 32 sign bytes), qh[8] @66,
// scales[8] @74. Group l of sub-block ib: grid index qs[4ib+l] | (qh[ib] >> 2l & 3) << 8 into
// iq2s_grid (1024 × 8 magnitudes), signs the byte qs[32+4ib+l] (bit k: element k negative),
// scale nibble l/2 of scales[ib]: db = d·(0.5 + nibble)·0.25.
function deqIQ2_S(s: usize, d: usize): void {
  const dd = f16(load<u16>(s));
  for (let ib = 0; ib < 8; ib++) {
    const scb = byte(s + 74 + ib), qh = byte(s + 66 + ib);
    for (let l = 0; l < 4; l++) {
      const db = dd * (<f32>0.5 + <f32>(l < 2 ? scb & 0xf : scb >> 4)) * <f32>0.25;
      const idx = byte(s + 2 + 4 * ib + l) | (((qh >> (2 * l)) & 3) << 8);
      const signs = byte(s + 34 + 4 * ib + l);
      const grid = IQ2S_GRID + (<usize>idx << 3);
      for (let k = 0; k < 8; k++) {
        const v = db * <f32>byte(grid + k);
        put(d, 32 * ib + 8 * l + k, (signs >> k) & 1 ? -v : v);
      }
    }
  }
}

// IQ3_S (110 bytes): f16 d @0, qs[64] @2, qh[8] @66, signs[32] @74, scales[4] @106. Group l of
// sub-block ib: two grid entries (4 magnitudes each) qs[8ib+2l+j] | (qh[ib] >> 2l+j & 1) << 8 into
// iq3s_grid (512 × 4), signs byte signs[4ib+l], scale nibble ib%2 of scales[ib/2]: db = d·(1 + 2·nibble).
function deqIQ3_S(s: usize, d: usize): void {
  const dd = f16(load<u16>(s));
  for (let ib = 0; ib < 8; ib++) {
    const scb = byte(s + 106 + (ib >> 1));
    const odd: u32 = 1 + 2 * ((scb >> (4 * (ib & 1))) & 0xf);
    const db = dd * <f32>odd;
    const qh = byte(s + 66 + ib);
    for (let l = 0; l < 4; l++) {
      const i0 = byte(s + 2 + 8 * ib + 2 * l) | (((qh >> (2 * l)) & 1) << 8);
      const i1 = byte(s + 3 + 8 * ib + 2 * l) | (((qh >> (2 * l + 1)) & 1) << 8);
      const signs = byte(s + 74 + 4 * ib + l);
      const g0 = IQ3S_GRID + (<usize>i0 << 2), g1 = IQ3S_GRID + (<usize>i1 << 2);
      for (let k = 0; k < 8; k++) {
        const v = db * <f32>(k < 4 ? byte(g0 + k) : byte(g1 + k - 4));
        put(d, 32 * ib + 8 * l + k, (signs >> k) & 1 ? -v : v);
      }
    }
  }
}

/** IQ1S_DELTA = IQ1M_DELTA in ggml-common.h: the grid's ternary values are shifted by ±1/8. */
const IQ1_DELTA: f32 = 0.125;

// IQ1_S (50 bytes): f16 d @0, qs[32] @2, qh u16[8] @34. Sub-block ib: qh[ib] bits 0..11 are the
// high 3 bits of its 4 grid indices, bits 12..14 the scale (dl = d·(2s + 1)), bit 15 the sign of
// the delta. Grid entries (iq1s_grid, 2048) are 8 int8 values in {-1, 0, 1}: y = dl·(g + delta).
function deqIQ1_S(s: usize, d: usize): void {
  const dd = f16(load<u16>(s));
  for (let ib = 0; ib < 8; ib++) {
    const qh = <u32>load<u16>(s + 34 + 2 * ib);
    const odd: u32 = 2 * ((qh >> 12) & 7) + 1;
    const dl = dd * <f32>odd;
    const delta = qh & 0x8000 ? -IQ1_DELTA : IQ1_DELTA;
    for (let l = 0; l < 4; l++) {
      const grid = IQ1S_GRID + (<usize>(byte(s + 2 + 4 * ib + l) | (((qh >> (3 * l)) & 7) << 8)) << 3);
      for (let k = 0; k < 8; k++) put(d, 32 * ib + 8 * l + k, dl * (<f32>load<i8>(grid + k) + delta));
    }
  }
}

// IQ1_M (56 bytes): qs[32] @0, qh[16] @32, scales u16[4] @48; no separate d: the f16 block scale
// is the top nibbles of the four scale words (word 0 lowest). Sub-block ib has two 3-bit scales in
// word ib/2 at bits 6·(ib%2) and +3 (groups 0-1 and 2-3); qh[2ib + l/2] holds, per group, 3 high
// index bits (nibble l%2, bits 0..2) and the delta's sign (bit 3 of that nibble).
function deqIQ1_M(s: usize, d: usize): void {
  const w0 = <u32>load<u16>(s + 48), w1 = <u32>load<u16>(s + 50), w2 = <u32>load<u16>(s + 52), w3 = <u32>load<u16>(s + 54);
  const dd = f16(<u16>((w0 >> 12) | ((w1 >> 8) & 0xf0) | ((w2 >> 4) & 0xf00) | (w3 & 0xf000)));
  for (let ib = 0; ib < 8; ib++) {
    const sc = <u32>load<u16>(s + 48 + 2 * (ib >> 1));
    for (let l = 0; l < 4; l++) {
      const odd: u32 = 2 * ((sc >> (6 * (ib & 1) + (l < 2 ? 0 : 3))) & 7) + 1;
      const dl = dd * <f32>odd;
      const h = byte(s + 32 + 2 * ib + (l >> 1)) >> (4 * (l & 1));
      const delta = h & 8 ? -IQ1_DELTA : IQ1_DELTA;
      const grid = IQ1S_GRID + (<usize>(byte(s + 4 * ib + l) | ((h & 7) << 8)) << 3);
      for (let k = 0; k < 8; k++) put(d, 32 * ib + 8 * l + k, dl * (<f32>load<i8>(grid + k) + delta));
    }
  }
}

/** Decodes one block of type t at src into f32 at dst (blockElems(t) values). */
export function dequantBlock(t: i32, src: usize, dst: usize): void {
  switch (t) {
    case T_F32: store<f32>(dst, load<f32>(src)); break;
    case T_F16: store<f32>(dst, f16(load<u16>(src))); break;
    case T_BF16: store<f32>(dst, bf16(load<u16>(src))); break;
    case T_Q4_0: deqQ4_0(src, dst); break;
    case T_Q4_1: deqQ4_1(src, dst); break;
    case T_Q5_0: deqQ5_0(src, dst); break;
    case T_Q5_1: deqQ5_1(src, dst); break;
    case T_Q8_0: deqQ8_0(src, dst); break;
    case T_Q2_K: deqQ2_K(src, dst); break;
    case T_Q3_K: deqQ3_K(src, dst); break;
    case T_Q4_K: deqQ4_K(src, dst); break;
    case T_Q5_K: deqQ5_K(src, dst); break;
    case T_Q6_K: deqQ6_K(src, dst); break;
    case T_IQ2_XXS: deqIQ2_XXS(src, dst); break;
    case T_IQ2_XS: deqIQ2_XS(src, dst); break;
    case T_IQ3_XXS: deqIQ3_XXS(src, dst); break;
    case T_IQ4_NL: deqIQ4_NL(src, dst); break;
    case T_IQ4_XS: deqIQ4_XS(src, dst); break;
    case T_IQ2_S: deqIQ2_S(src, dst); break;
    case T_IQ3_S: deqIQ3_S(src, dst); break;
    case T_IQ1_S: deqIQ1_S(src, dst); break;
    case T_IQ1_M: deqIQ1_M(src, dst); break;
    default: unreachable();
  }
}
