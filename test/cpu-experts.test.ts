import { describe, expect, it } from 'vitest';
import { openEngine } from '../ts/engine/index.js';
import { CpuEngine } from '../ts/engine/cpu/cpu-engine.js';
import { Rng } from '../ts/model/synth.js';
import { fixture } from './helpers.js';

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

  it('refuses a cache too small for one layer\'s top-k with a clear error', async () => {
    await expect(openEngine({ model: fixture('tinyA/tinyA-q2.gguf'), backend: 'cpu', ctx: 256, streamExperts: true, expertCacheMiB: 0.05 }))
      .rejects.toThrow(/an expert cache of 0 slots \(0\.1 MiB asked\) cannot hold one layer's experts: need 6 expert slots/);
  });
});
