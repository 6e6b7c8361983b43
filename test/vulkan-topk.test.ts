/**
 * GPU top-k for sampling with a temperature (shaders/topk.comp): the device's k best must be the
 * sampler's top-k set in its order (larger logit first, ties to the lower id), and sampling from
 * them must draw exactly the token the WASM sampler draws from the whole row with the same seed.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openEngine } from '../ts/engine/index.js';
import type { VkEngine } from '../ts/engine/vulkan/vk-engine.js';
import { TOPK_MAX } from '../ts/engine/vulkan/vk-engine.js';
import { Rng } from '../ts/model/synth.js';
import { fixture } from './helpers.js';

/** A grammar mask allowing `ids` over a vocabulary of n tokens. */
function maskOf(n: number, ids: number[]) {
  const bits = new Uint32Array((n + 31) >>> 5);
  for (const i of ids) bits[i >>> 5] |= 1 << (i & 31);
  return { bits, count: new Set(ids).size };
}

/** The reference order: logit descending, id ascending on ties; NaN never kept. */
function hostTopK(row: Float32Array, k: number): [number, number][] {
  const ids = [...row.keys()].filter((i) => !Number.isNaN(row[i]));
  ids.sort((a, b) => (row[b] - row[a]) || (a - b));
  return ids.slice(0, k).map((i) => [i, row[i]]);
}

describe('GPU top-k', () => {
  let e: VkEngine;
  beforeAll(async () => { e = (await openEngine({ model: fixture('tinyR/tinyR-q2.gguf'), backend: 'vulkan', ctx: 256 })) as VkEngine; });
  afterAll(() => e.dispose());

  it('finds the k best of crafted rows: ties at the boundary, −∞, repeated values, every k', () => {
    const n = e.shape.nVocab, r = new Rng(5);
    const rows: Float32Array[] = [];
    // few distinct values: long runs of ties everywhere, including across the k-th place
    rows.push(Float32Array.from({ length: n }, () => r.int(0, 6) * 0.5));
    // random values with −∞ entries and a block of equal maxima
    const b = Float32Array.from({ length: n }, () => r.normal() * 3);
    for (let i = 0; i < n; i += 7) b[i] = -Infinity;
    for (let i = n - 40; i < n; i++) b[i] = 100;
    rows.push(b);
    // all equal: the k lowest ids
    rows.push(new Float32Array(n).fill(-1.25));
    for (const row of rows) {
      e.dev.write(e.buf.LOGITS, 0, new Uint8Array(row.buffer));
      for (const k of [1, 2, 20, 33, TOPK_MAX]) {
        const got = e.out.topK(k), f = new Float32Array(got.buffer);
        const want = hostTopK(row, k);
        expect(Array.from({ length: k }, (_, i) => [got[2 * i + 1], f[2 * i]])).toEqual(want);
      }
    }
  });

  it('sampling with a temperature draws what the host sampler draws from the whole row (same seed)', async () => {
    const s = e.newSession();
    // every draw reads the device's k pairs: from a top-k run of its own (topK) or from the
    // stages the decode step ran (after a draw with the same k: the step folds them in)
    let gpu = 0, runs = 0;
    const topK = e.out.topK.bind(e.out), readTopK = e.out.readTopK.bind(e.out);
    e.out.topK = (k: number, row?: number) => { runs++; return topK(k, row); };
    e.out.readTopK = (k: number) => { gpu++; return readTopK(k); };
    try {
      const opts = [
        { temperature: 0.6, topK: 20, topP: 0.95, minP: 0 },
        { temperature: 1.5, topK: 40, topP: 1, minP: 0.05 },
        { temperature: 0.9, topK: 1, topP: 0.5, minP: 0 },
      ];
      const rng = e.core.alloc(8);
      let prompt = [5, 17, 300, 42, 9];
      for (let step = 0; step < 6; step++) {
        await s.eval(prompt);
        // every draw while the row is still on the device (the GPU top-k path), then the host's
        const ids = opts.map((o, i) => { s.seed(1000 * step + i); return s.sample(o); });
        const row = s.logits();
        opts.forEach((o, i) => {
          new DataView(e.core.memory.buffer).setBigUint64(rng, BigInt(1000 * step + i), true);
          expect(ids[i]).toBe(e.sampleWith(row, o, rng));
        });
        prompt = [(prompt[0] * 31 + step) % e.shape.nVocab];
      }
      expect(gpu).toBe(6 * opts.length);
      // one k throughout (as a request samples): after the first draw with it, each decode step
      // brings its pairs (no second submission), and the draws still equal the host's
      await s.eval([7]);
      s.sample(opts[0]);
      await s.eval([8]);
      runs = 0;
      for (let step = 0; step < 4; step++) {
        s.seed(step);
        const id = s.sample(opts[0]);
        new DataView(e.core.memory.buffer).setBigUint64(rng, BigInt(step), true);
        expect(id).toBe(e.sampleWith(s.logits(), opts[0], rng));
        await s.eval([id]);
      }
      expect(runs).toBe(0);
    } finally {
      e.out.topK = topK;
      e.out.readTopK = readTopK;
      s.dispose();
    }
  });

  it('sampling under a grammar mask: the device probe draws what the host draws over the allowed tokens', async () => {
    const s = e.newSession();
    const rng = e.core.alloc(8);
    const n = e.shape.nVocab;
    let probes = 0;
    const topK = e.out.topK.bind(e.out), readTopK = e.out.readTopK.bind(e.out);
    e.out.topK = (k: number, row?: number) => { probes++; return topK(k, row); };
    e.out.readTopK = (k: number) => { probes++; return readTopK(k); };
    try {
      // the row read once on a twin session (reading it from s would take the device path away),
      // before s runs (another session's step would move s's row to the host)
      const twin = e.newSession();
      await twin.eval([5, 17, 300, 42, 9]);
      const row = twin.logits();
      twin.dispose();
      await s.eval([5, 17, 300, 42, 9]);
      const order = [...row.keys()].sort((a, b) => row[b] - row[a] || a - b);
      const masks = {
        'the arg-max allowed': order.slice(0, 300),
        'the best ten refused, some of the best 64 allowed': order.slice(10, 500),
        'none of the best 64 (the row is read)': order.slice(100, 140),
        'one token': [order[777]],
      };
      const opts = [{ temperature: 0 }, { temperature: 0.8, topK: 20, topP: 0.95, minP: 0 }, { temperature: 1, topK: 5, topP: 1, minP: 0 }];
      for (const [name, ids] of Object.entries(masks)) {
        const m = maskOf(n, ids);
        const allowed = [...new Set(ids)].sort((a, b) => a - b);
        for (const [j, o] of opts.entries()) {
          s.seed(j + 7);
          const got = s.sample(o, m);
          let want: number;
          if (o.temperature <= 0) want = allowed.reduce((b, i) => (row[i] > row[b] ? i : b), allowed[0]);
          else {
            new DataView(e.core.memory.buffer).setBigUint64(rng, BigInt(j + 7), true);
            want = allowed[e.sampleWith(Float32Array.from(allowed, (i) => row[i]), o, rng)];
          }
          expect({ name, j, got }).toEqual({ name, j, got: want });
        }
      }
      // the first masks were answered from the device's best 64 (no 1 MB row read)
      expect(probes).toBeGreaterThan(0);
    } finally {
      e.out.topK = topK;
      e.out.readTopK = readTopK;
      s.dispose();
    }
  });

  it('a grammar mask on the device (with the step, or after it): the arg-max among the allowed, no row read; the next step without one is unmasked', async () => {
    const n = e.shape.nVocab;
    const prompt = [5, 17, 300, 42], next = 9;
    // the row after prompt + next, read on a twin
    const twin = e.newSession();
    await twin.eval([...prompt, next]);
    const row = twin.logits();
    const plainArg = twin.sample({ temperature: 0 });
    twin.dispose();
    const order = [...row.keys()].sort((a, b) => row[b] - row[a] || a - b);
    const s = e.newSession();
    const reads = { n: 0 };
    const b = (s as unknown as { backend: { readLast(): Float32Array } }).backend;
    const read = b.readLast.bind(b);
    b.readLast = () => { reads.n++; return read(); };
    try {
      await s.eval(prompt);
      // the mask with the step, and (a mask not known before the step) after it: the arg-max again on the device
      for (const [ids, withStep] of [order.slice(100, 140), [order[n >> 1]], order.slice(1, n >> 1)].flatMap((x) => [[x, true], [x, false]] as const)) {
        const m = maskOf(n, ids);
        const base = s.tokens.length;
        await s.eval([next], withStep ? { mask: m } : {});
        const got = s.sample({ temperature: 0 }, m);
        const want = [...new Set(ids)].sort((a, b) => a - b).reduce((b, i) => (row[i] > row[b] ? i : b), ids[0]);
        expect(got).toBe(want);
        await s.rewind(base);
      }
      // answered on the device: the 1 MB row was never read
      expect(reads.n).toBe(0);
      // the mask does not outlive its step
      await s.eval([next]);
      expect(s.sample({ temperature: 0 })).toBe(plainArg);
    } finally {
      s.dispose();
    }
  });
});
