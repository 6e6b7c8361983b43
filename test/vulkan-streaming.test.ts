/**
 * SSD expert streaming on the Vulkan engine (--ssd-streaming): the streamed layers' routed
 * experts come from the file into a bounded pool of device slots. Every (token, expert) pair is
 * computed by the resident kernels on the slot, so the logits must be the resident engine's bit
 * for bit — with the smallest cache (one layer's experts) up to one slot short of the whole
 * model, with resident full layers, windows of the pool, cold and warm, several prefill chunks
 * and decode. Also: payloads move between streaming and resident engines, a read error fails
 * the eval by name and empties the session, impossible caches are refused with numbers.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { openEngine, type EngineOptions } from '../ts/engine/index.js';
import type { VkEngine } from '../ts/engine/vulkan/vk-engine.js';
import { tilesFor } from '../ts/engine/vulkan/expert-stream.js';
import { Rng } from '../ts/model/synth.js';
import { fixture, movedPayloadRows, readErrorRecovers, tmpDir, withFailingReads } from './helpers.js';
import OpenAI from 'openai';
import { buildApp } from '../ts/server/app.js';
import { loadAddon } from '../ts/vk/addon.js';

const MODELS = { A: fixture('tinyA/tinyA-q2q4.gguf'), R: fixture('tinyR/tinyR-q2.gguf') };
/** both sides the same KV types: f16 is streaming's default */
const KV = { k: 'f16', v: 'f16' } as const;

function tokens(seed: number, n: number): number[] {
  const r = new Rng(seed);
  return Array.from({ length: n }, () => r.int(0, 1000));
}

/** Prefill (chunks of 64: several steps), then a few decode steps: every logits row. */
async function pass(o: Partial<EngineOptions> & { model: string }, toks: number[], decode = 6) {
  const e = await openEngine({ backend: 'vulkan', ctx: 256, kvTypes: KV, chunk: 64, ...o }) as VkEngine;
  try {
    const s = e.newSession(), rows: Float32Array[] = [];
    await s.eval(toks, { onLogits: (x) => rows.push(x.slice()) });
    for (const t of toks.slice(0, decode)) { await s.eval([t]); rows.push(s.logits().slice()); }
    s.dispose();
    return { rows, stats: e.expertStats(), describe: e.describe(), batchRows: e.batchRows };
  } finally {
    e.dispose();
  }
}

const same = (a: Float32Array[], b: Float32Array[]) => a.length === b.length && a.every((r, i) => Buffer.from(r.buffer).equals(Buffer.from(b[i].buffer)));

describe('Vulkan SSD expert streaming', () => {
  it('gives the resident logits bit for bit, from one layer\'s experts up to one slot short of the model, with full layers and pool windows', async () => {
    for (const [name, model] of Object.entries(MODELS)) {
      const toks = tokens(name === 'A' ? 3 : 4, 150);
      const ref = await pass({ model }, toks);
      const e = await openEngine({ model, backend: 'vulkan', ctx: 256 });
      const { nLayer, nExpert } = e.shape;
      e.dispose();
      const cases: Partial<EngineOptions>[] = [
        { expertCacheSlots: nExpert },
        { expertCacheSlots: nExpert + 3 },
        { expertCacheSlots: nLayer * nExpert - 1 },
        { expertCacheSlots: nExpert, expertFullLayers: 2 },
        // a binding of 3 slots: the pool is several buffers, each matvec runs once per window
        { expertCacheSlots: 2 * nExpert, vkMaxBinding: 3 * 110_592 + 100 },
        // upload mode: the resident weights copied instead of imported
        { expertCacheSlots: nExpert + 1, vkWeights: 'upload' },
        // staged reads (a discrete GPU's way: device-local slots filled by device copies), also windowed
        { expertCacheSlots: nExpert + 2, vkStreamDirect: false },
        { expertCacheSlots: 2 * nExpert, vkMaxBinding: 3 * 110_592 + 100, vkStreamDirect: false },
      ];
      for (const c of cases) {
        const got = await pass({ model, streamExperts: true, ...c }, toks);
        expect(same(got.rows, ref.rows), `${name} ${JSON.stringify(c)}`).toBe(true);
        const st = got.stats!;
        expect(st.streaming).toBe(true);
        expect(st.slots).toBe(c.expertCacheSlots);
        expect(st.misses).toBeGreaterThan(0);
        expect(st.bytesRead).toBeGreaterThan(0);
        expect(got.describe).toMatch(new RegExp(`streamed from the file through ${c.expertCacheSlots} device slots`));
        if (c.expertFullLayers) expect(got.describe).toMatch(/experts of layers 0-1 resident/);
        expect(got.describe).toMatch(c.vkStreamDirect === false ? /filled through a [\d.]+ MiB host stage/ : /read into in place/);
      }
      // the smallest cache must evict (more loads than the streamed experts); a larger one loads less
      const small = await pass({ model, streamExperts: true, expertCacheSlots: nExpert }, toks);
      expect(small.stats!.misses).toBeGreaterThan(nLayer * nExpert);
      const big = await pass({ model, streamExperts: true, expertCacheSlots: nLayer * nExpert - 1 }, toks);
      expect(big.stats!.misses).toBeLessThan(small.stats!.misses);
    }
  }, 300_000);

  it('q8_0/q4_0 KV streams bit-identically too, and every layer resident (full layers = all) needs no slots', async () => {
    const toks = tokens(8, 80);
    const kv = { k: 'q8_0', v: 'q4_0' } as const;
    const ref = await pass({ model: MODELS.A, kvTypes: kv }, toks);
    const got = await pass({ model: MODELS.A, kvTypes: kv, streamExperts: true, expertCacheSlots: 6 }, toks);
    expect(same(got.rows, ref.rows)).toBe(true);
    const all = await pass({ model: MODELS.A, kvTypes: kv, streamExperts: true, expertFullLayers: 4 }, toks);
    expect(same(all.rows, ref.rows)).toBe(true);
    expect(all.stats!.slots).toBe(0);
    expect(all.stats!.misses).toBe(0);
  }, 120_000);

  it('warm start: the routes are counted into the usage file; the next engine preloads the most used and misses less; cold preloads none', async () => {
    const file = path.join(tmpDir(), 'usage.json');
    const toks = tokens(5, 40);
    const o = { model: MODELS.A, streamExperts: true, expertCacheSlots: 12 } as const;
    const first = await pass({ ...o, expertUsage: { file } }, toks);
    expect(first.stats!.preloaded).toBe(0);
    const counts = (JSON.parse(fs.readFileSync(file, 'utf8')) as { counts: number[] }).counts;
    expect(counts.length).toBe(4 * 6);
    expect(counts.reduce((x, y) => x + y, 0)).toBeGreaterThan(0);
    const warm = await pass({ ...o, expertUsage: { file } }, toks);
    expect(warm.stats!.preloaded).toBe(12);
    expect(warm.describe).toMatch(/12 experts preloaded from .*usage\.json/);
    expect(warm.stats!.misses).toBeLessThan(first.stats!.misses);
    expect(same(warm.rows, first.rows)).toBe(true);
    const cold = await pass({ ...o, expertUsage: { file, cold: true } }, toks);
    expect(cold.stats!.preloaded).toBe(0);
    expect(cold.describe).toMatch(/cold start/);
    expect(same(cold.rows, first.rows)).toBe(true);
  }, 120_000);

  it('a session saved while streaming loads into a resident engine (and back) and goes on bit-identically', async () => {
    const toks = tokens(9, 50), more = [7, 300, 42, 9];
    const common = { backend: 'vulkan', ctx: 256, kvTypes: KV, model: MODELS.A } as const;
    const streamed = await openEngine({ ...common, streamExperts: true, expertCacheSlots: 8 });
    const resident = await openEngine(common);
    try {
      // streaming → resident and resident → streaming
      const [ra, ...moved] = await movedPayloadRows(streamed, resident, toks, more);
      for (const x of moved) expect(same(x, ra)).toBe(true);
    } finally {
      streamed.dispose(); resident.dispose();
    }
  }, 120_000);

  it('a read error on the model file mid-step fails that eval naming the file, empties the session, and the next eval works', async () => {
    const common = { backend: 'vulkan', ctx: 256, kvTypes: KV, model: MODELS.A } as const;
    for (const direct of [true, false]) {
      const e = await openEngine({ ...common, streamExperts: true, expertCacheSlots: 6, vkStreamDirect: direct });
      const ref = await openEngine(common);
      try {
        const { s, r } = await readErrorRecovers(e, ref, /tinyA-q2q4\.gguf/, 1);
        // a decode step (its segments run on this thread) fails the same way
        let failed = false;
        for (const t of [7, 300, 42, 9, 100, 11, 23, 500]) {
          await withFailingReads(0, async () => { try { await s.eval([t]); } catch (err) { failed = true; expect((err as Error).message).toMatch(/tinyA-q2q4\.gguf: EIO/); } });
          if (failed) break;
          await r.eval([t]);
        }
        expect(failed).toBe(true);
        expect(s.tokens.length).toBe(0);
        await s.eval(r.tokens.slice());
        expect(Buffer.from(s.logits().buffer).equals(Buffer.from(r.logits().buffer))).toBe(true);
      } finally {
        e.dispose(); ref.dispose();
      }
    }
  }, 60_000);

  it('refuses impossible caches with the numbers; the default cache follows the driver\'s memory budget; batched sessions fall back to taking turns', async () => {
    const common = { backend: 'vulkan', ctx: 256, model: MODELS.A, streamExperts: true } as const;
    await expect(openEngine({ ...common, expertCacheSlots: 5 })).rejects.toThrow(/an expert cache of 5 slots \([\d.]+ MiB asked\) cannot hold one layer's experts: need 6 expert slots = [\d.]+ MiB/);
    // a 12 MiB device: the resident part and scratch leave no room for one layer's 6 slots
    await expect(openEngine({ ...common, vkMemoryLimit: 12 * 2 ** 20 })).rejects.toThrow(/MiB of device memory left after .* the expert cache needs at least 6 slots = [\d.]+ MiB, one layer's experts/);
    await expect(openEngine({ ...common, vkMemoryLimit: 12 * 2 ** 20, expertFullLayers: 2 })).rejects.toThrow(/with layers 0-1's experts.*--ssd-streaming-full-layers 2.*lower --ssd-streaming-full-layers/);
    // room for one layer's slots, not for the 20 asked (the weights mapped from the file count:
    // lavapipe's memory is unified)
    await expect(openEngine({ ...common, vkMemoryLimit: 17 * 2 ** 20, expertCacheSlots: 20 })).rejects.toThrow(/an expert cache of 20 slots = [\d.]+ MiB does not fit .*: [\d.]+ MiB left after/);
    // the default cache follows the driver's memory budget where it reports one (lavapipe does
    // not: a budget of 17 MiB is reported here by wrapping info())
    const addon = loadAddon() as { Device: new (i: number) => { info(): Record<string, unknown> } };
    const Real = addon.Device;
    addon.Device = class extends Real { info() { return { ...super.info(), memoryBudgetBytes: 17 * 2 ** 20 }; } };
    try {
      const b = await openEngine({ ...common });
      const slots = b.expertStats!()!.slots;
      expect(slots).toBeGreaterThanOrEqual(6);
      expect(slots).toBeLessThan(24);
      expect(b.describe()).toMatch(/planned within the driver's memory budget of 0\.02 GiB \(VK_EXT_memory_budget\)/);
      b.dispose();
    } finally {
      addon.Device = Real;
    }
    const unbudgeted = await openEngine({ ...common });
    expect(unbudgeted.expertStats!()!.slots).toBe(24);
    expect(unbudgeted.describe()).not.toMatch(/memory budget/);
    unbudgeted.dispose();
    // a cache asked larger than every streamed expert holds them all (24 slots), no more
    const capped = await openEngine({ ...common, expertCacheMiB: 200 });
    expect(capped.expertStats!()!.slots).toBe(24);
    capped.dispose();
    const e = await openEngine({ ...common, expertCacheSlots: 6, batchRows: 4 });
    try {
      expect(e.batchRows).toBe(1);
      expect(e.describe()).toMatch(/batched   not available: SSD streaming/);
    } finally {
      e.dispose();
    }
  }, 60_000);

  it('groups a step\'s pairs by slot as moe_tiles does: slots ascending, tiles of at most BN pairs', () => {
    const { list, tiles } = tilesFor(Uint32Array.of(7, 2, 7, 7, 2, 9, 7), 2);
    expect([...list]).toEqual([1, 4, 0, 2, 3, 6, 5]);
    expect([...tiles]).toEqual([4, 0, 0, 0, 2, 0, 2, 0, 7, 2, 2, 0, 7, 4, 2, 0, 9, 6, 1, 0]);
  });
});

describe('q36-server with Vulkan streaming and the disk KV cache', () => {
  it('a prompt saved to disk by a streaming server loads into a resident one (and back), answering as a fresh resident server does', async () => {
    const text = fs.readFileSync(fixture('bench', 'lighthouse.txt'), 'utf8').slice(0, 1500);
    const msgs: OpenAI.ChatCompletionMessageParam[] = [{ role: 'system', content: text }, { role: 'user', content: 'Summarise.' }];
    const policy = { minTokens: 64, coldMaxTokens: 4000, trimTokens: 8, alignTokens: 64, continuedIntervalTokens: 100000 };
    const serve = async (stream: boolean, dir?: string) => {
      const engine = await openEngine({ model: MODELS.A, backend: 'vulkan', ctx: 2048, kvTypes: KV, ...(stream ? { streamExperts: true, expertCacheSlots: 8 } : {}) });
      const { app, ctx } = await buildApp({ engine, defaultMaxTokens: 4, ...(dir ? { kvDisk: { dir, spaceMiB: 64, ...policy } } : {}), log: () => {} });
      const base = await app.listen({ host: '127.0.0.1', port: 0 });
      const client = new OpenAI({ baseURL: `${base}/v1`, apiKey: 'x' });
      // the whole message (a thinking model's 4 tokens may all be reasoning) and the token count
      const ask = async () => { const r = await client.chat.completions.create({ model: 'x', messages: msgs, max_tokens: 4, temperature: 0 }); return JSON.stringify({ m: r.choices[0].message, n: r.usage!.completion_tokens }); };
      return { app, ctx, ask, close: async () => { await app.close(); engine.dispose(); } };
    };
    const fresh = await serve(false);
    const want = await fresh.ask();
    expect(JSON.parse(want).n).toBe(4);
    await fresh.close();
    for (const [first, second] of [[true, false], [false, true]]) {
      const dir = tmpDir();
      const a = await serve(first, dir);
      expect(await a.ask()).toBe(want);
      expect(a.ctx.coordinator.stats.diskSaves).toBeGreaterThanOrEqual(1);
      await a.close();
      const b = await serve(second, dir);
      expect(await b.ask()).toBe(want);
      expect(b.ctx.coordinator.stats.diskLoads).toBe(1);
      await b.close();
    }
  }, 120_000);
});

describe('mapped() and copyRegions() (the addon\'s staged uploads)', () => {
  it('a host-visible buffer\'s memory is written in place, copyRegions moves scattered pieces, bad regions are refused', async () => {
    const e = await openEngine({ backend: 'vulkan', ctx: 64, model: MODELS.A }) as VkEngine;
    const dev = e.dev;
    const stage = dev.createBuffer(300, true), buf = dev.createBuffer(4096, false), local = dev.createBuffer(64, false);
    try {
      const data = Uint8Array.from({ length: 300 }, (_, i) => i % 251);
      new Uint8Array(dev.mapped(stage)).set(data);
      expect(Buffer.from(dev.read(stage, 0, 300)).equals(Buffer.from(data))).toBe(true);
      dev.write(buf, 0, new Uint8Array(4096));
      dev.copyRegions(buf, stage, Float64Array.of(1000, 0, 100, 10, 200, 100, 4000, 150, 50));
      const want = new Uint8Array(4096);
      want.set(data.subarray(0, 100), 1000); want.set(data.subarray(200, 300), 10); want.set(data.subarray(150, 200), 4000);
      expect(Buffer.from(dev.read(buf, 0, 4096)).equals(Buffer.from(want))).toBe(true);
      expect(() => dev.copyRegions(buf, stage, Float64Array.of(4090, 0, 100))).toThrow(/outside a buffer/);
      expect(() => dev.copyRegions(buf, stage, Float64Array.of(0, 250, 100))).toThrow(/outside a buffer/);
      expect(() => dev.copyRegions(buf, stage, Float64Array.of(0, 0))).toThrow(/triples expected/);
      expect(() => dev.copyRegions(buf, stage, new Uint32Array(3) as unknown as Float64Array)).toThrow(/Float64Array expected/);
      expect(() => dev.mapped(local)).toThrow(/not a host-visible buffer/);
    } finally {
      dev.freeBuffer(stage); dev.freeBuffer(buf); dev.freeBuffer(local);
      e.dispose();
    }
  });
});
