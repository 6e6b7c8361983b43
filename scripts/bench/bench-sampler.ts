/**
 * bench-sampler: milliseconds per WASM sampler call on a full-size vocabulary row (248320 random
 * logits), for a few sampling settings (the server and CLI default first).
 *
 *   node dist/scripts/bench/bench-sampler.js
 */
import { Core } from '../../ts/core/wasm.js';

interface SamplerExports { sample(l: number, n: number, t: number, k: number, p: number, m: number, rng: number): number }
const core = new Core();
const x = core.x as unknown as SamplerExports;
const n = 248320;
const ptr = core.alloc(n * 4), rng = core.alloc(8);
const lg = core.f32(ptr, n);
let s = 1;
for (let i = 0; i < n; i++) { s = (Math.imul(s, 1103515245) + 12345) >>> 0; lg[i] = (s / 2 ** 32) * 20 - 10; }
console.log(`# bench-sampler: ${n} logits, node ${process.version}, ${new Date().toISOString()}`);
for (const [t, k, p, m] of [[0.6, 20, 0.95, 0], [0.7, 40, 0.9, 0.01], [1.0, 0, 1, 0.05]]) {
  x.sample(ptr, n, t, k, p, m, rng);
  const N = 20, t0 = performance.now();
  for (let i = 0; i < N; i++) x.sample(ptr, n, t, k, p, m, rng);
  console.log(`temp ${t} top-k ${k} top-p ${p} min-p ${m}: ${((performance.now() - t0) / N).toFixed(3)} ms per sample`);
}
