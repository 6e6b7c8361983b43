import { readQuantOracle } from '../scripts/lib/quant-oracle.js';
import { describe, expect, it } from 'vitest';
import { ALL_TYPES, GgmlType, rowBytes, typeName } from '../ts/gguf/index.js';
import { QuantKernels } from '../ts/core/quant.js';
import { Rng } from '../ts/model/synth.js';
import { f16ToF32, f32ToF16 } from '../ts/model/f16.js';
import { fixture } from './helpers.js';

const q = new QuantKernels();
const SUPPORTED = ALL_TYPES.filter((t) => t.supported);

/** Oracle blocks of a type (random bytes with valid scales, made by llama.cpp's tools). */
function oracleBlocks(name: string): { bytes: number; blocks: Uint8Array[] } {
  const o = readQuantOracle(fixture('quant', `${name}.bin`));
  return { bytes: o.bytes, blocks: Array.from({ length: o.nBlocks }, (_, i) => o.block(i)) };
}

/** A random row of n elements of type t, assembled from random oracle blocks. */
function randomRow(t: number, n: number, rng: Rng): Uint8Array {
  const { bytes, blocks } = oracleBlocks(typeName(t).toLowerCase());
  const be = ALL_TYPES.find((x) => x.id === t)!.blockElems;
  const row = new Uint8Array((n / be) * bytes);
  for (let i = 0; i < n / be; i++) {
    const blk = blocks[rng.int(0, blocks.length - 1)];
    row.set(blk, i * bytes);
    // scalar types: keep magnitudes sane (the oracle f32/f16 blocks hold any finite value)
  }
  return row;
}

function randomX(n: number, rng: Rng): Float32Array {
  const x = new Float32Array(n);
  for (let i = 0; i < n; i++) x[i] = rng.normal();
  return x;
}

/** Exact (float64) dot of the dequantized row with x, and Σ|w·x| (the scale of rounding error). */
function exactDot(w: Float32Array, x: Float32Array): { dot: number; mag: number } {
  let dot = 0, mag = 0;
  for (let i = 0; i < w.length; i++) { dot += w[i] * x[i]; mag += Math.abs(w[i] * x[i]); }
  return { dot, mag };
}

describe('dot products match float64 dots of the dequantized rows (≤ 1e-6 relative to Σ|w·x|)', () => {
  const rng = new Rng(42);
  for (const ti of SUPPORTED) {
    it(ti.name, () => {
      let worst = 0;
      for (const n of [256, 512, 1024, 2048, 4096, 8192]) {
        const w = randomRow(ti.id, n, rng);
        const x = randomX(n, rng);
        const ref = exactDot(q.dequantize(ti.id, w, n), x);
        if (!Number.isFinite(ref.mag) || ref.mag === 0) continue;
        for (const scalar of [false, true]) {
          const got = q.dot(ti.id, w, x, scalar);
          const rel = Math.abs(got - ref.dot) / ref.mag;
          worst = Math.max(worst, rel);
          expect(rel, `${ti.name} n=${n} ${scalar ? 'scalar' : 'simd'}: got ${got}, exact ${ref.dot}`).toBeLessThanOrEqual(1e-6);
        }
      }
      console.log(`${ti.name.padEnd(8)} worst relative dot error ${worst.toExponential(2)}`);
    });
  }
});

describe('matvec and batched matmul', () => {
  for (const t of [GgmlType.Q8_0, GgmlType.Q2_K, GgmlType.IQ2_XXS, GgmlType.Q4_K, GgmlType.Q6_K, GgmlType.BF16, GgmlType.F32]) {
    it(`${typeName(t)}: every output equals the float64 reference`, () => {
      const rng = new Rng(t + 1);
      const rows = 7, n = 512, nx = 5;
      const rowsData: Uint8Array[] = [];
      for (let r = 0; r < rows; r++) rowsData.push(randomRow(t, n, rng));
      const rb = rowBytes(t, n);
      const w = new Uint8Array(rows * rb);
      rowsData.forEach((r, i) => w.set(r, i * rb));
      const x = randomX(n * nx, rng);
      for (const batch of [1, nx]) {
        const y = q.matmul(t, w, rows, n, x.subarray(0, n * batch));
        expect(y.length).toBe(rows * batch);
        for (let j = 0; j < batch; j++) {
          for (let r = 0; r < rows; r++) {
            const ref = exactDot(q.dequantize(t, rowsData[r], n), x.subarray(j * n, (j + 1) * n));
            expect(Math.abs(y[j * rows + r] - ref.dot) / ref.mag).toBeLessThanOrEqual(1e-6);
          }
        }
      }
    });
  }
});

/** Independent transcription of ggml's quantize_row_q8_0_ref / q4_0_ref with f32 arithmetic. */
function refQ8_0(x: Float32Array): Uint8Array {
  const f = Math.fround;
  const out = new Uint8Array((x.length / 32) * 34);
  const dv = new DataView(out.buffer);
  for (let b = 0; b < x.length / 32; b++) {
    let amax = 0;
    for (let j = 0; j < 32; j++) amax = Math.max(amax, Math.abs(x[b * 32 + j]));
    const d = f(amax / 127), id = d ? f(1 / d) : 0;
    dv.setUint16(b * 34, f32ToF16(d), true);
    for (let j = 0; j < 32; j++) {
      const v = f(x[b * 32 + j] * id);
      const r = Math.sign(v) * Math.floor(Math.abs(v) + 0.5); // roundf: half away from zero (exact in f64)
      dv.setInt8(b * 34 + 2 + j, r);
    }
  }
  return out;
}

function refQ4_0(x: Float32Array): Uint8Array {
  const f = Math.fround;
  const out = new Uint8Array((x.length / 32) * 18);
  const dv = new DataView(out.buffer);
  for (let b = 0; b < x.length / 32; b++) {
    let amax = 0, mx = 0;
    for (let j = 0; j < 32; j++) { const v = x[b * 32 + j]; if (Math.abs(v) > amax) { amax = Math.abs(v); mx = v; } }
    const d = f(mx / -8), id = d ? f(1 / d) : 0;
    dv.setUint16(b * 18, f32ToF16(d), true);
    for (let j = 0; j < 16; j++) {
      const q0 = Math.min(15, Math.trunc(f(f(x[b * 32 + j] * id) + 8.5)));
      const q1 = Math.min(15, Math.trunc(f(f(x[b * 32 + 16 + j] * id) + 8.5)));
      out[b * 18 + 2 + j] = q0 | (q1 << 4);
    }
  }
  return out;
}

describe('KV-cache quantizers', () => {
  const rng = new Rng(9);
  const x = randomX(4096, rng);
  x[5] = 0; x[100] = -0; // zeros and a near-tie region
  for (let i = 0; i < 32; i++) x[64 + i] = 0; // an all-zero block

  it('Q8_0 writes exactly the reference quantizer\'s bytes and round-trips within half a step', () => {
    const bytes = q.quantize(GgmlType.Q8_0, x);
    expect(Buffer.from(bytes).equals(Buffer.from(refQ8_0(x)))).toBe(true);
    const y = q.dequantize(GgmlType.Q8_0, bytes, x.length);
    for (let b = 0; b < x.length / 32; b++) {
      const d = f16ToF32(bytes[b * 34] | (bytes[b * 34 + 1] << 8));
      let amax = 0;
      for (let j = 0; j < 32; j++) amax = Math.max(amax, Math.abs(x[b * 32 + j]));
      // half a step, plus the error of storing d as f16 (quants were computed with the f32 d)
      const bound = 0.5 * d + 127 * Math.abs(d - amax / 127) + 1e-7;
      for (let j = 0; j < 32; j++) expect(Math.abs(y[b * 32 + j] - x[b * 32 + j])).toBeLessThanOrEqual(bound);
    }
  });

  it('Q4_0 writes exactly the reference quantizer\'s bytes and round-trips within one step', () => {
    const bytes = q.quantize(GgmlType.Q4_0, x);
    expect(Buffer.from(bytes).equals(Buffer.from(refQ4_0(x)))).toBe(true);
    const y = q.dequantize(GgmlType.Q4_0, bytes, x.length);
    for (let b = 0; b < x.length / 32; b++) {
      const d = Math.abs(f16ToF32(bytes[b * 18] | (bytes[b * 18 + 1] << 8)));
      for (let j = 0; j < 32; j++) expect(Math.abs(y[b * 32 + j] - x[b * 32 + j])).toBeLessThanOrEqual(d * 1.001 + 1e-7);
    }
  });

  it('F16 is round-to-nearest-even: every oracle f16 value survives decode → encode unchanged', () => {
    const o = readQuantOracle(fixture('quant', 'f16.bin'));
    const n = o.nBlocks, raw = o.raw;
    const vals = q.dequantize(GgmlType.F16, raw, n);
    const back = q.quantize(GgmlType.F16, vals);
    expect(Buffer.from(back).equals(Buffer.from(raw))).toBe(true);
    // and f32 values between two halves round to the nearer one (ties to even)
    const mid = new Float32Array([1 + 2 ** -11, 1 + 3 * 2 ** -11, 65520, 2 ** -25, 3 * 2 ** -25]);
    const h = new Uint16Array(q.quantize(GgmlType.F16, mid).buffer);
    expect(Array.from(h)).toEqual([0x3c00, 0x3c02, 0x7c00, 0x0000, 0x0002]);
  });
});

describe('bad inputs raise clear errors', () => {
  it('row length not a multiple of the block', () => {
    expect(() => q.dot(GgmlType.Q8_0, new Uint8Array(34 * 2), new Float32Array(48))).toThrow(/row of 48 elements is not a multiple of the Q8_0 block \(32\)/);
    expect(() => q.dequantize(GgmlType.Q2_K, new Uint8Array(84), 100)).toThrow(/not a multiple of the Q2_K block \(256\)/);
  });
  it('truncated tensor data', () => {
    expect(() => q.dequantize(GgmlType.IQ2_XXS, new Uint8Array(65), 256)).toThrow(/truncated IQ2_XXS data: 1 row\(s\) of 256 elements need 66 bytes, got 65/);
    expect(() => q.matmul(GgmlType.Q8_0, new Uint8Array(34 * 3), 4, 32, new Float32Array(32))).toThrow(/truncated Q8_0 data/);
  });
  it('unsupported types', () => {
    expect(() => q.dequantize(GgmlType.TQ1_0, new Uint8Array(54), 256)).toThrow(/TQ1_0 is not supported/);
    expect(() => q.quantize(GgmlType.Q2_K, new Float32Array(256))).toThrow(/not a KV-cache type/);
  });
});

describe('batched matmul is bit-identical to single-row dot (prefill == decode)', () => {
  for (const ti of SUPPORTED) {
    it(ti.name, () => {
      const rng = new Rng(ti.id + 100);
      const rows = 3, n = 512, nx = 6;
      const rb = rowBytes(ti.id, n);
      const w = new Uint8Array(rows * rb);
      for (let r = 0; r < rows; r++) w.set(randomRow(ti.id, n, rng), r * rb);
      const x = randomX(n * nx, rng);
      const y = q.matmul(ti.id, w, rows, n, x);
      for (let j = 0; j < nx; j++) {
        for (let r = 0; r < rows; r++) {
          const single = q.dot(ti.id, w.subarray(r * rb, (r + 1) * rb), x.subarray(j * n, (j + 1) * n));
          if (Number.isNaN(single)) continue;
          expect(Object.is(y[j * rows + r], Math.fround(single)) || y[j * rows + r] === Math.fround(single), `${ti.name} row ${r} x ${j}`).toBe(true);
        }
      }
    });
  }
});
