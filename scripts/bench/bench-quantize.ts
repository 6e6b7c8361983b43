/**
 * bench-quantize: single-thread throughput of q36-quantize's row quantizers (M weights/s) over one
 * 256-row × 2048-column slab of deterministic pseudo-random values with random importance weights.
 *   node dist/scripts/bench/bench-quantize.js
 */
import { GgmlType, rowBytes } from '../../ts/gguf/index.js';
import { Rng } from '../../ts/model/synth.js';
import { quantizeRow } from '../../ts/quantize/rows.js';

const ROWS = 256, COLS = 2048;
const r = new Rng(7);
const x = Float32Array.from({ length: ROWS * COLS }, () => r.normal() * 0.02);
const w = Float32Array.from({ length: COLS }, () => 0.5 + r.normal() ** 2);
for (const type of [GgmlType.Q8_0, GgmlType.Q4_K, GgmlType.Q2_K, GgmlType.IQ2_XXS]) {
  const rb = rowBytes(type, COLS), out = new Uint8Array(rb);
  quantizeRow(type, x.subarray(0, COLS), out, w); // warm-up (IQ2_XXS builds its grid tables once)
  const t = performance.now();
  for (let i = 0; i < ROWS; i++) quantizeRow(type, x.subarray(i * COLS, (i + 1) * COLS), out, w);
  const s = (performance.now() - t) / 1000;
  console.log(`${GgmlType[type].padEnd(8)} ${((ROWS * COLS) / s / 1e6).toFixed(2)} M weights/s (one thread)`);
}
