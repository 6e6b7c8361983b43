/**
 * The WASM sampler against an independent JS statement of its semantics (min-p cut, sort by logit
 * then lower id, top-k, temperature weights, top-p, a splitmix64 draw): the top-k selection must
 * pick exactly the first k of the full sort, ties included.
 */
import { describe, expect, it } from 'vitest';
import { Core } from '../ts/core/wasm.js';
import { Rng } from '../ts/model/synth.js';

interface SamplerExports { sample(logits: number, n: number, temp: number, topK: number, topP: number, minP: number, rng: number): number }

const M64 = (1n << 64n) - 1n;
function rngNext(st: { s: bigint }): number {
  let z = (st.s + 0x9e3779b97f4a7c15n) & M64;
  st.s = z;
  z = ((z ^ (z >> 30n)) * 0xbf58476d1ce4e5b9n) & M64;
  z = ((z ^ (z >> 27n)) * 0x94d049bb133111ebn) & M64;
  z = z ^ (z >> 31n);
  return Number(z >> 11n) * (1 / 9007199254740992);
}

function refSample(lg: Float32Array, temp: number, topK: number, topP: number, minP: number, st: { s: bigint }): number {
  const f = Math.fround;
  let best = 0;
  for (let i = 1; i < lg.length; i++) if (lg[i] > lg[best]) best = i;
  if (temp <= 0) return best;
  const mx = lg[best];
  const cut = minP > 0 ? f(mx + f(f(temp) * f(Math.log(f(minP))))) : -Infinity;
  const ids: number[] = [];
  for (let i = 0; i < lg.length; i++) if (lg[i] >= cut) ids.push(i);
  ids.sort((a, b) => lg[b] - lg[a] || a - b);
  let m = topK > 0 && topK < ids.length ? topK : ids.length;
  const prob: number[] = [];
  let sum = 0;
  for (let i = 0; i < m; i++) { const e = Math.exp(f(f(lg[ids[i]] - mx) / f(temp))); prob.push(f(e)); sum += e; }
  if (topP < 1) {
    let acc = 0;
    for (let i = 0; i < m; i++) { acc += prob[i] / sum; if (acc >= f(topP)) { m = i + 1; break; } }
    sum = 0;
    for (let i = 0; i < m; i++) sum += prob[i];
  }
  const r = rngNext(st) * sum;
  let acc = 0;
  for (let i = 0; i < m; i++) { acc += prob[i]; if (r < acc) return ids[i]; }
  return ids[m - 1];
}

describe('sampler', () => {
  const core = new Core();
  const x = core.x as unknown as SamplerExports;
  const n = 5000;
  const lp = core.alloc(n * 4), rp = core.alloc(8);
  const rng = new Rng(11);
  // logits on a 1/4 grid: many exact ties, also at the k-th place
  const logits = new Float32Array(n).map(() => Math.round(rng.normal() * 12) / 4);
  core.f32(lp, n).set(logits);
  const settings: [number, number, number, number][] = [
    [0.6, 20, 0.95, 0], [1, 1, 1, 0], [1, 7, 1, 0], [0.8, 40, 0.9, 0.01], [1.2, 300, 1, 0], [1, 4999, 0.99, 0],
    [1, 0, 0.9, 0.05], [0.5, 20, 1, 0.5], [0, 20, 0.95, 0],
  ];
  it.each(settings)('temp %f top-k %i top-p %f min-p %f: same draws as the reference', (temp, topK, topP, minP) => {
    const st = { s: 12345n };
    new DataView(core.memory.buffer).setBigUint64(rp, st.s, true);
    const got: number[] = [], want: number[] = [];
    for (let i = 0; i < 200; i++) {
      got.push(x.sample(lp, n, temp, topK, topP, minP, rp));
      want.push(refSample(logits, temp, topK, topP, minP, st));
    }
    expect(got).toEqual(want);
    if (temp > 0 && topK !== 1 && minP < 0.5) expect(new Set(got).size).toBeGreaterThan(1); // it really sampled
  });

  it('top-k among equal logits keeps the lowest ids (the full sort\'s order)', () => {
    const tied = new Float32Array(n).fill(-5);
    for (let i = 100; i < n; i += 97) tied[i] = 3; // 50 ids share the top value
    core.f32(lp, n).set(tied);
    new DataView(core.memory.buffer).setBigUint64(rp, 7n, true);
    const lowest = Array.from({ length: 20 }, (_, j) => 100 + 97 * j);
    const seen = new Set<number>();
    for (let i = 0; i < 400; i++) seen.add(x.sample(lp, n, 1, 20, 1, 0, rp));
    expect([...seen].sort((a, b) => a - b)).toEqual(lowest);
    core.f32(lp, n).set(logits);
  });
});
