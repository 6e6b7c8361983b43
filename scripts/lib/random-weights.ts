/**
 * Random weights of the q2 recipe's block types for the matmul checks and benchmarks (bench-mmc,
 * mmc-check): random bytes with every f16 scale set to a small finite value, so no NaN or
 * infinity comes out of the decoders.
 */
import type { Rng } from '../../ts/model/synth.js';

/** block bytes, values a block, and where its f16 scales sit */
const LAYOUT: Record<string, { bytes: number; n: number; halves: number[] }> = {
  q8_0: { bytes: 34, n: 32, halves: [0] }, iq2_xxs: { bytes: 66, n: 256, halves: [0] }, q2_k: { bytes: 84, n: 256, halves: [80, 82] },
};

/** rows × n weights of `type` (f32: uniform in ±scale; the block types: scales 2^-8 … 2^-6) */
export function randomWeights(rng: Rng, type: string, rows: number, n: number, scale = 0.1): { bytes: Uint8Array; rowBytes: number } {
  if (type === 'f32') {
    const x = new Float32Array(rows * n);
    for (let i = 0; i < x.length; i++) x[i] = (rng.float() * 2 - 1) * scale;
    return { bytes: new Uint8Array(x.buffer), rowBytes: n * 4 };
  }
  const L = LAYOUT[type];
  if (!L || n % L.n !== 0) throw new Error(`randomWeights: no layout for ${type} rows of ${n}`);
  const rowBytes = (n / L.n) * L.bytes, out = new Uint8Array(rows * rowBytes);
  for (let i = 0; i < out.length; i++) out[i] = rng.int(0, 255);
  // f16 scales 2^-8 … 2^-6 (exponent 7..9)
  for (let b = 0; b < out.length; b += L.bytes) for (const h of L.halves) { out[b + h] = rng.int(0, 255); out[b + h + 1] = (7 + rng.int(0, 2)) << 2; }
  return { bytes: out, rowBytes };
}

/** n floats uniform in ±1 */
export function randomFloats(rng: Rng, n: number): Uint8Array {
  const x = new Float32Array(n);
  for (let i = 0; i < n; i++) x[i] = rng.float() * 2 - 1;
  return new Uint8Array(x.buffer);
}
