import { describe, expect, it } from 'vitest';
import { openEngine } from '../ts/engine/index.js';
import { CpuEngine } from '../ts/engine/cpu/cpu-engine.js';
import { Rng } from '../ts/model/synth.js';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fixture, movedPayloadRows, readErrorRecovers, tmpDir } from './helpers.js';

describe('routed experts streamed through the LRU cache', () => {
  it('give bit-identical logits to resident experts, with evictions', async () => {
    const r = new Rng(11);
    const toks = Array.from({ length: 150 }, () => r.int(0, 1032));
    const resident = await openEngine({ model: fixture('tinyA/tinyA-q2q4.gguf'), backend: 'cpu', ctx: 256, streamExperts: false });
    // 8 slots of ~55-72 KiB for 4 layers × 6 experts: every chunk evicts
    const streamed = await openEngine({ model: fixture('tinyA/tinyA-q2q4.gguf'), backend: 'cpu', ctx: 256, streamExperts: true, expertCacheMiB: 0.75 }) as CpuEngine;
    const a: Float32Array[] = [], b: Float32Array[] = [];
    const sa = resident.newSession(), sb = streamed.newSession();
    await sa.eval(toks, { onLogits: (x) => a.push(x) });
    await sb.eval(toks, { onLogits: (x) => b.push(x) });
    for (const t of toks.slice(0, 20)) { await sa.eval([t]); await sb.eval([t]); a.push(sa.logits()); b.push(sb.logits()); }
    expect(b.length).toBe(a.length);
    for (let i = 0; i < a.length; i++) expect(Buffer.from(b[i].buffer).equals(Buffer.from(a[i].buffer))).toBe(true);
    const st = streamed.weights.stats;
    console.log(`expert cache: ${st.slots} slots, ${st.hits} hits, ${st.misses} misses`);
    expect(st.streaming).toBe(true);
    expect(st.slots).toBeLessThan(24);
    expect(st.misses).toBeGreaterThan(24); // more loads than experts: evictions happened
    expect(st.hits).toBeGreaterThan(0);
  });

  it('warm start: the routes a run took are counted into the usage file; the next engine preloads the most used and misses less, logits unchanged', async () => {
    const file = path.join(tmpDir(), 'usage.json');
    const r = new Rng(5);
    const toks = Array.from({ length: 40 }, () => r.int(0, 1032));
    const open = (o: { cold?: boolean }) => openEngine({ model: fixture('tinyA/tinyA-q2q4.gguf'), backend: 'cpu', ctx: 256, streamExperts: true, expertCacheSlots: 12, expertUsage: { file, ...o } }) as Promise<CpuEngine>;
    const pass = async (e: CpuEngine) => { const s = e.newSession(); const rows: Float32Array[] = []; await s.eval(toks, { onLogits: (x) => rows.push(x.slice()) }); s.dispose(); return rows; };
    const first = await open({});
    const a = await pass(first);
    expect(first.weights.stats.preloaded).toBe(0);
    const coldMisses = first.weights.stats.misses;
    first.dispose(); // writes the counts
    // a forward call counts each expert it needed once (one 40-token chunk here: ≤ 4 layers × 6)
    const saved = JSON.parse(fs.readFileSync(file, 'utf8')) as { counts: number[] };
    const once = saved.counts.reduce((x, y) => x + y, 0);
    expect(once).toBeGreaterThan(0);
    expect(once).toBeLessThanOrEqual(4 * 6);
    const warm = await open({});
    expect(warm.weights.stats.preloaded).toBe(12);
    expect(warm.describe()).toMatch(/12 experts preloaded from .*usage\.json/);
    const b = await pass(warm);
    expect(warm.weights.stats.misses).toBeLessThan(coldMisses);
    b.forEach((row, i) => expect(Buffer.from(row.buffer).equals(Buffer.from(a[i].buffer))).toBe(true));
    warm.dispose();
    const cold = await open({ cold: true });
    expect(cold.weights.stats.preloaded).toBe(0);
    cold.dispose();
    // the counts add up over runs
    expect((JSON.parse(fs.readFileSync(file, 'utf8')) as { counts: number[] }).counts.reduce((x, y) => x + y, 0)).toBe(2 * once);
  });

  it('full layers: the first N layers\' experts resident, the rest streamed — bit-identical, no misses in the resident layers', async () => {
    const r = new Rng(7);
    const toks = Array.from({ length: 70 }, () => r.int(0, 1032));
    const rows = async (o: { fullLayers?: number; slots?: number; stream: boolean }) => {
      const e = await openEngine({ model: fixture('tinyA/tinyA-q2q4.gguf'), backend: 'cpu', ctx: 256, streamExperts: o.stream, expertCacheSlots: o.slots, expertFullLayers: o.fullLayers }) as CpuEngine;
      const s = e.newSession(), out: Float32Array[] = [];
      await s.eval(toks, { onLogits: (x) => out.push(x.slice()) });
      const st = { ...e.weights.stats }, d = e.describe();
      s.dispose(); e.dispose();
      return { out, st, d };
    };
    const ref = await rows({ stream: false });
    const part = await rows({ stream: true, fullLayers: 2, slots: 6 });
    const all = await rows({ stream: true, fullLayers: 4 });
    for (const x of [part, all]) x.out.forEach((row, i) => expect(Buffer.from(row.buffer).equals(Buffer.from(ref.out[i].buffer))).toBe(true));
    expect(part.d).toMatch(/experts of layers 0-1 resident, the rest streamed through 6 cache slots/);
    // 2 chunks (64 + 6 tokens) × 2 streamed layers, each loading that chunk's experts: ≤ 2 × 2 × 6 misses
    expect(part.st.misses).toBeGreaterThan(0);
    expect(part.st.misses).toBeLessThanOrEqual(24);
    expect(all.st.misses).toBe(0);
    expect(all.st.slots).toBe(0);
  });

  it('a session saved while streaming loads into a resident engine (and back) and goes on bit-identically', async () => {
    const r = new Rng(9);
    const toks = Array.from({ length: 50 }, () => r.int(0, 1032)), more = [7, 300, 42, 9];
    const m = fixture('tinyA/tinyA-q2q4.gguf');
    const streamed = await openEngine({ model: m, backend: 'cpu', ctx: 256, streamExperts: true, expertCacheSlots: 8 });
    const resident = await openEngine({ model: m, backend: 'cpu', ctx: 256, streamExperts: false });
    // streaming → resident and resident → streaming
    const [ra, ...moved] = await movedPayloadRows(streamed, resident, toks, more);
    for (const x of moved) x.forEach((row, i) => expect(Buffer.from(row.buffer).equals(Buffer.from(ra[i].buffer))).toBe(true));
    streamed.dispose(); resident.dispose();
  });

  it('a read error on the model file mid-step fails that eval with a message naming the file, empties the session, and the next eval works', async () => {
    const m = fixture('tinyA/tinyA-q2q4.gguf');
    const e = await openEngine({ model: m, backend: 'cpu', ctx: 256, streamExperts: true, expertCacheSlots: 8 });
    const ref = await openEngine({ model: m, backend: 'cpu', ctx: 256, streamExperts: false });
    // the next expert loads fail after two reads
    const { s, r } = await readErrorRecovers(e, ref, /tinyA-q2q4\.gguf/, 2);
    s.dispose(); r.dispose(); e.dispose(); ref.dispose();
  });

  it('a prefill sweeping more experts than the cache holds keeps a layer cached (plain LRU would miss everything)', async () => {
    // 5 chunks of 64 tokens, each needing all 6 experts of each of 4 layers, through 12 slots:
    // the first chunk fills the slots with layers 0-1 and cycles layers 2-3 through transient
    // loads; every later chunk then misses layers 0, 2, 3 and hits layer 1's 6 experts (4 × 6 = 24)
    const e = await openEngine({ model: fixture('tinyA/tinyA-q2q4.gguf'), backend: 'cpu', ctx: 512, streamExperts: true, expertCacheSlots: 12 }) as CpuEngine;
    const s = e.newSession();
    await s.eval(Array.from({ length: 320 }, (_, i) => (i * 37 + 5) % 1000));
    expect(e.weights.stats).toMatchObject({ hits: 24, misses: 96 });
    s.dispose(); e.dispose();
  });

  it('refuses a cache too small for one layer\'s top-k with a clear error', async () => {
    await expect(openEngine({ model: fixture('tinyA/tinyA-q2.gguf'), backend: 'cpu', ctx: 256, streamExperts: true, expertCacheMiB: 0.05 }))
      .rejects.toThrow(/an expert cache of 0 slots \(0\.1 MiB asked\) cannot hold one layer's experts: need 6 expert slots/);
  });
});
