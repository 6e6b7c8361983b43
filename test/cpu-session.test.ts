import * as fs from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { openEngine, type Engine } from '../ts/engine/index.js';
import { PayloadError } from '../ts/engine/payload.js';
import { Rng } from '../ts/model/synth.js';
import { fixture } from './helpers.js';

const maxAbsDiff = (a: Float32Array, b: Float32Array) => { let m = 0; for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i])); return m; };
const randomTokens = (n: number, seed: number) => { const r = new Rng(seed); return Array.from({ length: n }, () => r.int(0, 1032)); };

describe('chunked prefill equals token-by-token decode (tinyR: real head sizes)', () => {
  let chunked: Engine, single: Engine;
  beforeAll(async () => {
    chunked = await openEngine({ model: fixture('tinyR/tinyR-q2.gguf'), backend: 'cpu', ctx: 800, kvTypes: { k: 'f16', v: 'f16' }, chunk: 64 });
    single = await openEngine({ model: fixture('tinyR/tinyR-q2.gguf'), backend: 'cpu', ctx: 800, kvTypes: { k: 'f16', v: 'f16' }, chunk: 1 });
  });
  it.each([1, 63, 64, 65, 200, 700])('%i tokens: every position within 1e-4', async (n) => {
    const toks = randomTokens(n, n);
    const a: Float32Array[] = [], b: Float32Array[] = [];
    const sa = chunked.newSession(), sb = single.newSession();
    await sa.eval(toks, { onLogits: (r) => a.push(r) });
    for (const t of toks) await sb.eval([t], { onLogits: (r) => b.push(r) });
    let worst = 0;
    for (let i = 0; i < n; i++) worst = Math.max(worst, maxAbsDiff(a[i], b[i]));
    console.log(`prefill ${n}: max |chunked − token-by-token| = ${worst.toExponential(2)}`);
    expect(worst).toBeLessThanOrEqual(1e-4);
    expect(maxAbsDiff(sa.logits(), sb.logits())).toBeLessThanOrEqual(1e-4);
    sa.dispose(); sb.dispose();
  });
});

describe('session state: payload, snapshots, rewind, sync, sampling', () => {
  let e: Engine;
  beforeAll(async () => {
    e = await openEngine({ model: fixture('tinyA/tinyA-q2.gguf'), backend: 'cpu', ctx: 512, kvTypes: { k: 'q8_0', v: 'q4_0' }, snapshotInterval: 64 });
  });

  it('a payload saved after N tokens continues with identical logits in a fresh session', async () => {
    const toks = randomTokens(150, 1);
    const a = e.newSession();
    await a.eval(toks.slice(0, 100));
    const payload = a.savePayload();
    expect(new DataView(payload.buffer).getUint32(0, true)).toBe(0x20363351); // "Q36 "
    expect(new DataView(payload.buffer).getUint32(4, true)).toBe(3); // typed KV
    const b = e.newSession();
    b.loadPayload(payload);
    expect(b.tokens).toEqual(toks.slice(0, 100));
    expect(Array.from(b.logits())).toEqual(Array.from(a.logits()));
    await a.eval(toks.slice(100));
    await b.eval(toks.slice(100));
    expect(Array.from(b.logits())).toEqual(Array.from(a.logits()));
    a.dispose(); b.dispose();
  });

  it('corrupt or mismatched payloads are rejected with a clear error', async () => {
    const a = e.newSession();
    await a.eval(randomTokens(20, 2));
    const p = a.savePayload();
    const b = e.newSession();
    expect(() => b.loadPayload(p.subarray(0, p.length - 1))).toThrow(/truncated: layer 3 recurrent state|truncated/);
    const bad = p.slice(); bad[0] = 0x58;
    expect(() => b.loadPayload(bad)).toThrow(/bad magic/);
    const ver = p.slice(); new DataView(ver.buffer).setUint32(4, 9, true);
    expect(() => b.loadPayload(ver)).toThrow(/unsupported version 9/);
    const extra = new Uint8Array(p.length + 4); extra.set(p);
    expect(() => b.loadPayload(extra)).toThrow(/4 unexpected bytes/);
    const other = await openEngine({ model: fixture('tinyR/tinyR-q2.gguf'), backend: 'cpu', ctx: 512, kvTypes: { k: 'q8_0', v: 'q4_0' } });
    expect(() => other.newSession().loadPayload(p)).toThrow(PayloadError);
    expect(() => other.newSession().loadPayload(p)).toThrow(/different model: kvHeads is 2, this model has 1|different model/);
    const f16 = await openEngine({ model: fixture('tinyA/tinyA-q2.gguf'), backend: 'cpu', ctx: 512 });
    expect(() => f16.newSession().loadPayload(p)).toThrow(/KV types q8_0\/q4_0 differ from this session's f16\/f16/);
    // a rejected load leaves the session usable
    await b.eval([1, 2, 3]);
    expect(b.tokens).toEqual([1, 2, 3]);
  });

  it('rewind (through snapshots) and sync reuse the prefix and give the same logits as a fresh run', async () => {
    const toks = randomTokens(300, 3);
    const alt = randomTokens(80, 4);
    const s = e.newSession();
    await s.eval(toks);
    await s.rewind(200); // snapshot at 192 (interval 64), re-evaluates 8 tokens
    expect(s.tokens.length).toBe(200);
    await s.eval(alt);
    const fresh = e.newSession();
    await fresh.eval([...toks.slice(0, 200), ...alt]);
    expect(maxAbsDiff(s.logits(), fresh.logits())).toBe(0);
    // sync to a longer version of a prefix: only the new suffix is evaluated
    const r = await s.sync([...toks.slice(0, 200), ...alt, 5, 6, 7]);
    expect(r).toEqual({ reused: 280, evaluated: 3 });
    const r2 = await s.sync(toks.slice(0, 150));
    expect(r2.reused).toBeLessThanOrEqual(149);
    expect(r2.reused + r2.evaluated).toBe(150);
    const fresh2 = e.newSession();
    await fresh2.eval(toks.slice(0, 150));
    expect(maxAbsDiff(s.logits(), fresh2.logits())).toBe(0);
    s.dispose(); fresh.dispose(); fresh2.dispose();
  });

  it('same seed → same sampled text; different seeds differ', async () => {
    const prompt = randomTokens(10, 5);
    const run = async (seed: number) => {
      const s = e.newSession();
      s.seed(seed);
      await s.eval(prompt);
      const out: number[] = [];
      for (let i = 0; i < 24; i++) { const id = s.sample({ temperature: 1.0, topK: 50, topP: 0.95, minP: 0.01 }); out.push(id); await s.eval([id]); }
      s.dispose();
      return out;
    };
    const a = await run(42), b = await run(42), c = await run(43);
    expect(a).toEqual(b);
    expect(a).not.toEqual(c);
  });

  it('top-k and min-p restrict sampling; greedy is argmax', async () => {
    const s = e.newSession();
    await s.eval(randomTokens(5, 6));
    const lg = s.logits();
    const top = s.topLogprobs(3);
    expect(s.sample({ temperature: 0 })).toBe(top[0].id);
    for (let i = 0; i < 50; i++) expect(top.slice(0, 2).map((t) => t.id)).toContain(s.sample({ temperature: 1, topK: 2 }));
    expect(Math.exp(top[0].logprob) + Math.exp(top[1].logprob)).toBeLessThanOrEqual(1);
    let mx = -Infinity; for (const v of lg) mx = Math.max(mx, v);
    expect(lg[top[0].id]).toBe(mx);
    s.dispose();
  });
});
