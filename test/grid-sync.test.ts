/**
 * The persistent-kernel probe (scripts/experiments/grid-sync: grid_sync.comp, grid-sync.ts) on lavapipe: a
 * lone workgroup runs its device-wide barriers and every round sees the last one's writes; more
 * workgroups than the device runs at once end the dispatch flagged, never hung and never
 * reported as resident with wrong values. The chain of products (grid_chain.comp) gives the same
 * bits as one persistent dispatch and as a dispatch a round, and both match an independent
 * statement of the products here.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { gridChain, gridPipelines, gridSync } from '../scripts/experiments/grid-sync/grid-sync.js';
import { f16ToF32, f32ToF16 } from '../ts/model/f16.js';
import { Rng } from '../ts/model/synth.js';
import { loadAddon } from '../ts/vk/addon.js';

const dev = new (loadAddon().Device)(-1);
// the probe's shaders are not in the shipped addon: compiled and added here
const pipes = await gridPipelines(dev);
afterAll(() => dev.dispose());

describe('grid_sync probe', () => {
  it('one workgroup: resident, 50 rounds each seeing the last', () => {
    const r = gridSync({ dev, pipes, nWG: 1, rounds: 50 });
    expect(r).toMatchObject({ coResident: true, consistent: true });
  });
  it('4096 workgroups: flagged where they do not all run at once, consistent where they do', () => {
    const r = gridSync({ dev, pipes, nWG: 4096, rounds: 3, spinLimit: 2000 });
    // lavapipe runs a few at a time: the dispatch gives up and says so
    if (r.coResident) expect(r.consistent).toBe(true);
    else expect(r.consistent).toBe(false);
    if (dev.info().name.includes('llvmpipe')) expect(r.coResident).toBe(false);
  });
  it('refuses bad arguments by name', () => {
    expect(() => gridSync({ dev, pipes, nWG: 0, rounds: 1 })).toThrow(/0 workgroups/);
    expect(() => gridSync({ dev, pipes, nWG: 1, rounds: -1 })).toThrow(/-1 rounds/);
    expect(() => gridSync({ dev, pipes, nWG: 1, rounds: 1, spinLimit: 70000 })).toThrow(/spin limit 70000/);
  });
});

describe('grid_chain probe', () => {
  const n = 64, nMat = 3, rounds = 5, rng = new Rng(11);
  // f16 weights, scaled so the products stay in tanh's live range
  const wBits = new Uint16Array(nMat * n * n).map(() => f32ToF16((rng.float() * 2 - 1) * Math.sqrt(3 / n)));
  const x0 = new Float32Array(n).map(() => rng.float() * 2 - 1);
  const w = { buf: dev.createBuffer(wBits.byteLength, false), bytes: wBits.byteLength };
  dev.write(w.buf, 0, new Uint8Array(wBits.buffer));
  afterAll(() => dev.freeBuffer(w.buf));
  // the products in f64 (row r of matrix m: n weights from (m·n + r)·n)
  const expected = (() => {
    let x = Array.from(x0);
    for (let r = 0; r < rounds; r++) {
      const m = r % nMat;
      x = x.map((_, row) => {
        let s = 0;
        for (let j = 0; j < n; j++) s += f16ToF32(wBits[(m * n + row) * n + j]) * x[j];
        return Math.tanh(s);
      });
    }
    return x;
  })();
  const runChain = (persist: boolean, nWG: number) => {
    const c = gridChain({ dev, pipes, nWG, rounds, persist, n, w, nMat, x0 });
    try {
      c.run();
      return c.result();
    } finally {
      c.dispose();
    }
  };

  it('one persistent dispatch = a dispatch a round, bit for bit, and both match the products', () => {
    const p = runChain(true, 1), d1 = runChain(false, 1), d4 = runChain(false, 4);
    expect(p.coResident).toBe(true);
    expect(Array.from(p.x)).toEqual(Array.from(d1.x));
    expect(Array.from(d4.x)).toEqual(Array.from(d1.x));
    for (let i = 0; i < n; i++) expect(Math.abs(p.x[i] - expected[i])).toBeLessThan(1e-5);
    // not a fixed point: the vector moved
    expect(p.x.some((v, i) => Math.abs(v - x0[i]) > 0.05)).toBe(true);
  });
  it('refuses bad arguments by name', () => {
    expect(() => gridChain({ dev, pipes, nWG: 1, rounds, persist: true, n: 5000, w, nMat, x0 })).toThrow(/n 5000/);
    expect(() => gridChain({ dev, pipes, nWG: 1, rounds, persist: true, n: 63, w, nMat, x0 })).toThrow(/n 63/);
    expect(() => gridChain({ dev, pipes, nWG: 1, rounds: 0, persist: true, n, w, nMat, x0 })).toThrow(/0 rounds/);
    expect(() => gridChain({ dev, pipes, nWG: 1, rounds, persist: true, n, w, nMat, x0: new Float32Array(3) })).toThrow(/3 values/);
    expect(() => gridChain({ dev, pipes, nWG: 1, rounds, persist: true, n, w, nMat: 4, x0 })).toThrow(/weight buffer of 24576 bytes for 4 f16 matrices of 64×64/);
  });
});
