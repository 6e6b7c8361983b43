/**
 * Random but valid ggml blocks with a controlled weight RMS (quant-spec §7): random bytes from a
 * seeded xorshift PRNG, then the scale fields overwritten so decoded values have RMS ≈ sigma and
 * zero mean. Deterministic from the seed; used by make-model and by tests.
 */
import { GgmlType, rowBytes, typeName } from '../gguf/index.js';
import { QuantKernels } from '../core/quant.js';
import { f16ToF32, f32ToBf16, f32ToF16 } from './f16.js';

/** xorshift128: fast, seedable, good enough for test weights (not cryptographic). */
export class Rng {
  private a: number; private b: number; private c: number; private d: number;
  constructor(seed: number) {
    let s = (seed >>> 0) || 0x9e3779b9;
    const next = () => { s ^= s << 13; s >>>= 0; s ^= s >>> 17; s ^= s << 5; s >>>= 0; return s; };
    this.a = next(); this.b = next(); this.c = next(); this.d = next();
  }
  u32(): number {
    let t = this.d;
    const s = this.a;
    this.d = this.c; this.c = this.b; this.b = s;
    t ^= t << 11; t ^= t >>> 8;
    this.a = (t ^ s ^ (s >>> 19)) >>> 0;
    return this.a;
  }
  /** uniform in [0, 1) */
  float(): number { return this.u32() / 4294967296; }
  /** uniform integer in [lo, hi] */
  int(lo: number, hi: number): number { return lo + Math.floor(this.float() * (hi - lo + 1)); }
  normal(): number {
    const u = 1 - this.float();
    return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * this.float());
  }
  /** fills whole 32-bit words, then the tail byte by byte */
  fill(out: Uint8Array): void {
    const words = out.byteLength >>> 2;
    const w = new Uint32Array(out.buffer, out.byteOffset, (out.byteOffset & 3) === 0 ? words : 0);
    if (w.length === words) {
      let a = this.a, b = this.b, c = this.c, d = this.d;
      for (let i = 0; i < words; i++) {
        let t = d; const s = a; d = c; c = b; b = s;
        t ^= t << 11; t ^= t >>> 8;
        a = (t ^ s ^ (s >>> 19)) >>> 0;
        w[i] = a;
      }
      this.a = a; this.b = b; this.c = c; this.d = d;
      for (let i = words * 4; i < out.byteLength; i++) out[i] = this.u32() & 0xff;
    } else {
      for (let i = 0; i < out.byteLength; i++) out[i] = this.u32() & 0xff;
    }
  }
}

/** FNV-1a of a string mixed with a seed: one independent stream per tensor. */
export function seedFor(seed: number, name: string): number {
  let h = 0x811c9dc5 ^ seed;
  for (let i = 0; i < name.length; i++) { h ^= name.charCodeAt(i); h = Math.imul(h, 0x01000193); }
  return h >>> 0;
}

export interface FloatInit {
  /** value = mean + sigma·N(0,1) */
  mean?: number;
  sigma: number;
}

/**
 * Fills `out` with `nElems` values of `type` (a whole number of rows). For float types values are
 * mean + sigma·N(0,1); for quantized types the blocks decode to RMS ≈ sigma, zero mean.
 */
export function fillRandom(type: number, out: Uint8Array, nElems: number, rng: Rng, init: FloatInit): void {
  const mean = init.mean ?? 0;
  const sigma = init.sigma;
  const dv = new DataView(out.buffer, out.byteOffset, out.byteLength);
  const need = rowBytes(type, nElems);
  if (out.byteLength < need) throw new Error(`fillRandom: ${typeName(type)} × ${nElems} needs ${need} bytes, got ${out.byteLength}`);
  switch (type) {
    case GgmlType.F32:
      for (let i = 0; i < nElems; i++) dv.setFloat32(i * 4, mean + sigma * rng.normal(), true);
      return;
    case GgmlType.F16:
      for (let i = 0; i < nElems; i++) dv.setUint16(i * 2, f32ToF16(mean + sigma * rng.normal()), true);
      return;
    case GgmlType.BF16:
      for (let i = 0; i < nElems; i++) dv.setUint16(i * 2, f32ToBf16(mean + sigma * rng.normal()), true);
      return;
  }
  if (mean !== 0) throw new Error(`fillRandom: quantized ${typeName(type)} blocks are zero-mean`);
  rng.fill(out.subarray(0, need));
  switch (type) {
    case GgmlType.Q8_0: {
      const d = f32ToF16(sigma / 73.6);
      for (let o = 0; o < need; o += 34) {
        dv.setUint16(o, d, true);
        for (let j = 2; j < 34; j++) if (out[o + j] === 0x80) out[o + j] = 0x81; // avoid -128
      }
      return;
    }
    case GgmlType.Q2_K: {
      const d = f32ToF16(sigma / 10.17);
      const dmin = f32ToF16(1.5 * (sigma / 10.17));
      for (let o = 0; o < need; o += 84) {
        for (let j = 0; j < 16; j++) { const sc = 1 + (out[o + j] % 15); out[o + j] = sc | (sc << 4); }
        dv.setUint16(o + 80, d, true);
        dv.setUint16(o + 82, dmin, true);
      }
      return;
    }
    case GgmlType.IQ2_XXS: {
      const d = f32ToF16(sigma / 53.36);
      for (let o = 0; o < need; o += 66) dv.setUint16(o, d, true);
      return;
    }
    case GgmlType.Q4_K: {
      const dRaw = sigma / 169.7;
      const d = f32ToF16(dRaw), dmin = f32ToF16(7.5 * dRaw);
      const sc = new Uint8Array(8);
      for (let o = 0; o < need; o += 144) {
        for (let j = 0; j < 8; j++) sc[j] = 1 + (out[o + 4 + j] % 63);
        // 6-bit packing (quant-spec §3.5) with m_j = sc_j
        for (let j = 0; j < 4; j++) {
          out[o + 4 + j] = (sc[j] & 63) | ((sc[j + 4] >> 4) << 6);
          out[o + 8 + j] = (sc[j] & 63) | ((sc[j + 4] >> 4) << 6);
          out[o + 12 + j] = (sc[j + 4] & 0xf) | ((sc[j + 4] & 0xf) << 4);
        }
        dv.setUint16(o, d, true);
        dv.setUint16(o + 2, dmin, true);
      }
      return;
    }
    case GgmlType.Q6_K: {
      const d = f32ToF16(sigma / 1366);
      for (let o = 0; o < need; o += 210) dv.setUint16(o + 208, d, true);
      return;
    }
    default: {
      const sc = SCALED[type];
      if (!sc) throw new Error(`fillRandom: no random recipe for ${typeName(type)}`);
      setScales(type, out, need, f32ToF16(sigma / unitRms(type)));
    }
  }
}

/**
 * The other block types: random bytes with every f16 scale field set to one value d (a block's
 * offset fields, Q4_1/Q5_1's m and Q5_K's dmin, as the multiple of d that centres it), so the
 * decoded RMS is proportional to d; unitRms() measures it at d = 1 with the WASM decoders.
 */
const SCALED: Record<number, { bytes: number; d: number; m?: [number, number] }> = {
  [GgmlType.Q4_0]: { bytes: 18, d: 0 }, [GgmlType.Q4_1]: { bytes: 20, d: 0, m: [2, -7.5] },
  [GgmlType.Q5_0]: { bytes: 22, d: 0 }, [GgmlType.Q5_1]: { bytes: 24, d: 0, m: [2, -15.5] },
  [GgmlType.Q3_K]: { bytes: 110, d: 108 }, [GgmlType.Q5_K]: { bytes: 176, d: 0, m: [2, 15.5] },
  [GgmlType.IQ2_XS]: { bytes: 74, d: 0 }, [GgmlType.IQ2_S]: { bytes: 82, d: 0 }, [GgmlType.IQ3_XXS]: { bytes: 98, d: 0 },
  [GgmlType.IQ3_S]: { bytes: 110, d: 0 }, [GgmlType.IQ1_S]: { bytes: 50, d: 0 }, [GgmlType.IQ1_M]: { bytes: 56, d: 48 },
  [GgmlType.IQ4_NL]: { bytes: 18, d: 0 }, [GgmlType.IQ4_XS]: { bytes: 136, d: 0 },
};

function setScales(type: number, out: Uint8Array, need: number, d: number): void {
  const { bytes, d: at, m } = SCALED[type];
  const dv = new DataView(out.buffer, out.byteOffset, out.byteLength);
  const dm = m ? f32ToF16(m[1] * f16ToF32(d)) : 0;
  for (let o = 0; o < need; o += bytes) {
    if (type === GgmlType.IQ1_M) {
      // the f16 scale lives in the top nibbles of the four u16 scale words (lowest nibble first)
      for (let k = 0; k < 4; k++) dv.setUint16(o + at + 2 * k, (dv.getUint16(o + at + 2 * k, true) & 0x0fff) | (((d >> (4 * k)) & 0xf) << 12), true);
      continue;
    }
    dv.setUint16(o + at, d, true);
    if (m) dv.setUint16(o + m[0], dm, true);
    if (type === GgmlType.Q5_K) {
      // Q4_K's packing with m_j = sc_j (quant-spec §3.5): dmin = 15.5·d centres every sub-block
      const sc = new Uint8Array(8);
      for (let j = 0; j < 8; j++) sc[j] = 1 + (out[o + 4 + j] % 63);
      for (let j = 0; j < 4; j++) {
        out[o + 4 + j] = (sc[j] & 63) | ((sc[j + 4] >> 4) << 6);
        out[o + 8 + j] = (sc[j] & 63) | ((sc[j + 4] >> 4) << 6);
        out[o + 12 + j] = (sc[j + 4] & 0xf) | ((sc[j + 4] & 0xf) << 4);
      }
    }
  }
}


const unitCache = new Map<number, number>();
let kernels: QuantKernels | undefined;
/** RMS of 64 random blocks of `type` decoded with d = 1 (deterministic: a fixed seed). */
function unitRms(type: number): number {
  let r = unitCache.get(type);
  if (r === undefined) {
    kernels ??= new QuantKernels();
    const n = 64 * 256, b = new Uint8Array(rowBytes(type, n));
    new Rng(12345).fill(b);
    setScales(type, b, b.byteLength, 0x3c00);
    const v = kernels.dequantize(type, b, n);
    r = Math.sqrt(v.reduce((a, x) => a + x * x, 0) / n);
    unitCache.set(type, r);
  }
  return r;
}
