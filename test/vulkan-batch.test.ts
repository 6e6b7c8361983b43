/**
 * Batched decode (q36-server --batched-session): one step for the next token of several sessions.
 * Each row must compute what its session alone computes — the same greedy tokens (here: HF's
 * greedy_ids from the oracle), logits within the Vulkan tolerance of the session decoded alone —
 * whatever its batch-mates and their positions; the CPU runs the ordered fallback (bit-identical
 * to decoding alone); a failed step empties every member.
 */
import * as fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { evalBatch, batchedNatively } from '../ts/engine/batch.js';
import { openEngine, type Engine, type EngineOptions, type SampleOptions, type Session } from '../ts/engine/index.js';
import type { VkEngine } from '../ts/engine/vulkan/vk-engine.js';
import { fixture } from './helpers.js';

interface Case { prompt_ids: number[]; greedy_ids: number[] }
const cases = (JSON.parse(fs.readFileSync(fixture('tinyA', 'reference.json'), 'utf8')).cases as Case[]);
const STEPS = 12;

/** Greedy (or seeded sampled) decode of `steps` tokens; every step's logits row too. */
async function alone(e: Engine, prompt: number[], steps: number, o: SampleOptions = { temperature: 0 }, seed = 0): Promise<{ ids: number[]; rows: Float32Array[] }> {
  const s = e.newSession();
  try {
    await s.eval(prompt);
    s.seed(seed);
    const ids: number[] = [], rows: Float32Array[] = [];
    for (let k = 0; k < steps; k++) {
      rows.push(s.logits().slice());
      const id = s.sample(o);
      ids.push(id);
      await s.eval([id]);
    }
    return { ids, rows };
  } finally {
    s.dispose();
  }
}

/** The same decode for several sessions at once through evalBatch. */
async function batched(e: Engine, prompts: number[][], steps: number, o: SampleOptions = { temperature: 0 }, seeds?: number[]): Promise<{ ids: number[][]; rows: Float32Array[][]; sessions: Session[] }> {
  const sessions: Session[] = [];
  for (const [i, p] of prompts.entries()) { const s = e.newSession(); await s.eval(p); s.seed(seeds?.[i] ?? 0); sessions.push(s); }
  const ids = prompts.map(() => [] as number[]), rows = prompts.map(() => [] as Float32Array[]);
  for (let k = 0; k < steps; k++) {
    // sample from the device before anything reads the rows back (the greedy arg-max path)...
    const next = sessions.map((s) => s.sample(o));
    // ...then keep the rows for the comparison
    sessions.forEach((s, i) => { ids[i].push(next[i]); rows[i].push(s.logits().slice()); });
    await evalBatch(e, sessions.map((session, i) => ({ session, token: next[i] })));
  }
  return { ids, rows, sessions };
}

const maxDiff = (a: Float32Array, b: Float32Array) => { let m = 0; for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i])); return m; };

describe('Vulkan batched decode: each row equals its session decoded alone', () => {
  let e: Engine;
  const ref = new Map<number, { ids: number[]; rows: Float32Array[] }>();
  beforeAll(async () => {
    e = await openEngine({ model: fixture('tinyA/tinyA-bf16.gguf'), backend: 'vulkan', ctx: 768, kvTypes: { k: 'f16', v: 'f16' }, batchRows: 8 });
    for (let c = 0; c < cases.length; c++) ref.set(c, await alone(e, cases[c].prompt_ids, STEPS));
  }, 600_000);
  afterAll(() => e?.dispose());

  it('the engine takes 8-row batched steps on this device', () => {
    expect((e as VkEngine).batchIssue).toBeUndefined();
    expect(e.batchRows).toBe(8);
  });

  it('alone: the greedy tokens are HF\'s (the oracle)', () => {
    for (let c = 0; c < cases.length; c++) expect(ref.get(c)!.ids).toEqual(cases[c].greedy_ids.slice(0, STEPS));
  });

  // rows at different positions (prompts of 10 to 655 tokens); 8 rows repeat cases 0-2
  it.each([2, 3, 8])('%i rows: the same greedy tokens (HF\'s) and logits within 1e-3 of decoding alone', async (n) => {
    const which = Array.from({ length: n }, (_, i) => (n === 2 ? [1, 3][i] : i % cases.length));
    expect(batchedNatively(e, which.map(() => ({ session: undefined as never, token: 0 })))).toBe(true);
    const r = await batched(e, which.map((c) => cases[c].prompt_ids), STEPS);
    let worst = 0;
    which.forEach((c, i) => {
      expect(r.ids[i], `row ${i} (case ${c})`).toEqual(cases[c].greedy_ids.slice(0, STEPS));
      r.rows[i].forEach((row, k) => { worst = Math.max(worst, maxDiff(row, ref.get(c)!.rows[k])); });
    });
    console.log(`vulkan batched ${n} rows: max |batched − alone| = ${worst.toExponential(2)}`);
    expect(worst).toBeLessThanOrEqual(1e-3);
    // the sessions go on alone from where the batch left them
    for (const [i, s] of r.sessions.entries()) {
      expect(s.tokens.length).toBe(cases[which[i]].prompt_ids.length + STEPS);
      s.dispose();
    }
  }, 600_000);

  it('temperature sampling per row (the device top-k of each row): the tokens alone and batched are the same', async () => {
    const o = { temperature: 0.9, topK: 20, topP: 0.95 };
    const seeds = [11, 12, 13];
    const solo = [];
    for (let i = 0; i < 3; i++) solo.push((await alone(e, cases[i].prompt_ids, 8, o, seeds[i])).ids);
    const r = await batched(e, [0, 1, 2].map((i) => cases[i].prompt_ids), 8, o, seeds);
    expect(r.ids).toEqual(solo);
    r.sessions.forEach((s) => s.dispose());
  }, 600_000);

  it('a failed batched step empties every member; each then starts over cleanly', async () => {
    const sessions = [];
    for (const c of [0, 3]) { const s = e.newSession(); await s.eval(cases[c].prompt_ids); sessions.push(s); }
    const dev = (e as VkEngine).dev;
    const spy = vi.spyOn(dev, 'run').mockRejectedValueOnce(new Error('VK_ERROR_DEVICE_LOST (injected)'));
    try {
      await expect(evalBatch(e, sessions.map((session) => ({ session, token: 5 })))).rejects.toThrow(/DEVICE_LOST/);
    } finally {
      spy.mockRestore();
    }
    for (const s of sessions) {
      expect(s.tokens.length).toBe(0);
      expect(() => s.logits()).toThrow(/no logits/);
    }
    // a member evaluates its prompt again and decodes exactly as a fresh session
    await sessions[1].eval(cases[3].prompt_ids);
    expect(sessions[1].sample({ temperature: 0 })).toBe(cases[3].greedy_ids[0]);
    sessions.forEach((s) => s.dispose());
  }, 600_000);

  it('the same sessions in another order reuse the recorded step, each row still its own', async () => {
    const [a, b, c] = [e.newSession(), e.newSession(), e.newSession()];
    await a.eval(cases[0].prompt_ids); await b.eval(cases[3].prompt_ids); await c.eval(cases[2].prompt_ids);
    const record = vi.spyOn((e as VkEngine).dev, 'record');
    try {
      await evalBatch(e, [{ session: a, token: cases[0].greedy_ids[0] }, { session: b, token: cases[3].greedy_ids[0] }, { session: c, token: cases[2].greedy_ids[0] }]);
      const first = record.mock.calls.length;
      await evalBatch(e, [{ session: c, token: cases[2].greedy_ids[1] }, { session: a, token: cases[0].greedy_ids[1] }, { session: b, token: cases[3].greedy_ids[1] }]);
      expect(record.mock.calls.length).toBe(first);
    } finally {
      record.mockRestore();
    }
    expect(a.sample({ temperature: 0 })).toBe(cases[0].greedy_ids[2]);
    expect(b.sample({ temperature: 0 })).toBe(cases[3].greedy_ids[2]);
    expect(c.sample({ temperature: 0 })).toBe(cases[2].greedy_ids[2]);
    [a, b, c].forEach((s) => s.dispose());
  }, 600_000);

  it('refusals leave every member as it was: a session twice, a full context', async () => {
    const a = e.newSession(), b = e.newSession();
    await a.eval(cases[0].prompt_ids);
    await b.eval(cases[3].prompt_ids);
    const la = a.logits().slice();
    await expect(evalBatch(e, [{ session: a, token: 1 }, { session: a, token: 2 }])).rejects.toThrow(/twice/);
    const full = e.newSession();
    await full.eval(Array.from({ length: 768 }, (_, i) => 1 + (i % 50)));
    await expect(evalBatch(e, [{ session: a, token: 1 }, { session: full, token: 2 }])).rejects.toThrow(/context full/);
    expect(a.tokens.length).toBe(cases[0].prompt_ids.length);
    expect(maxDiff(a.logits(), la)).toBe(0);
    // a disposed batch-mate's recorded steps go with it; the others batch on
    full.dispose();
    await evalBatch(e, [{ session: a, token: cases[0].greedy_ids[0] }, { session: b, token: cases[3].greedy_ids[0] }]);
    expect(a.sample({ temperature: 0 })).toBe(cases[0].greedy_ids[1]);
    expect(b.sample({ temperature: 0 })).toBe(cases[3].greedy_ids[1]);
    a.dispose(); b.dispose();
  }, 600_000);
});

describe('Vulkan batched decode with the q8_0/q4_0 cache (tinyA q2)', () => {
  it('3 rows: the tokens of each session alone, logits within 1e-3', async () => {
    const e = await openEngine({ model: fixture('tinyA/tinyA-q2.gguf'), backend: 'vulkan', ctx: 768, kvTypes: { k: 'q8_0', v: 'q4_0' }, batchRows: 4 });
    try {
      const which = [4, 1, 2];
      const r = await batched(e, which.map((c) => cases[c].prompt_ids), STEPS);
      let worst = 0;
      for (const [i, c] of which.entries()) {
        const solo = await alone(e, cases[c].prompt_ids, STEPS);
        expect(r.ids[i]).toEqual(solo.ids);
        r.rows[i].forEach((row, k) => { worst = Math.max(worst, maxDiff(row, solo.rows[k])); });
      }
      console.log(`vulkan batched q8_0/q4_0 3 rows: max |batched − alone| = ${worst.toExponential(2)}`);
      expect(worst).toBeLessThanOrEqual(1e-3);
    } finally {
      e.dispose();
    }
  }, 600_000);
});

describe('memory planning', () => {
  it('--vk-memory-limit: the engine plans for the limit (refusing what exceeds it, with the numbers), never above the device', async () => {
    const model = fixture('tinyA/tinyA-q2.gguf');
    await expect(openEngine({ model, backend: 'vulkan', ctx: 768, vkMemoryLimit: 2 ** 20 })).rejects.toThrow(/model does not fit .* > 0\.00 GiB device memory \(--vk-memory-limit\)/);
    await expect(openEngine({ model, backend: 'vulkan', ctx: 768, vkMemoryLimit: 2 ** 60 })).rejects.toThrow(/vkMemoryLimit .* is not within .* device-local memory/);
    const e = await openEngine({ model, backend: 'vulkan', ctx: 768, vkMemoryLimit: 2 ** 30 });
    try {
      expect(e.describe()).toMatch(/planning for 1\.00 GiB \(--vk-memory-limit\)/);
    } finally {
      e.dispose();
    }
  });

  it('every live session counts: a session count whose KV caches and states do not fit is refused at open, with the numbers', async () => {
    await expect(openEngine({ model: fixture('tinyA/tinyA-q2.gguf'), backend: 'vulkan', ctx: 768, batchRows: 8, sessions: 1_000_000 }))
      .rejects.toThrow(/model does not fit .*KV\/state [\d.]+ GiB \(ctx 768 × 1000000 sessions\).*lower --ctx or --batched-session/);
  });
});

describe('CPU: the ordered fallback', () => {
  it('rows run one after another, bit-identical to decoding alone (and HF\'s greedy tokens)', async () => {
    const e = await openEngine({ model: fixture('tinyA/tinyA-bf16.gguf'), backend: 'cpu', ctx: 768 });
    try {
      expect(e.batchRows).toBe(1);
      const which = [0, 3, 2];
      expect(batchedNatively(e, which.map(() => ({ session: undefined as never, token: 0 })))).toBe(false);
      const r = await batched(e, which.map((c) => cases[c].prompt_ids), 8);
      for (const [i, c] of which.entries()) {
        const solo = await alone(e, cases[c].prompt_ids, 8);
        expect(r.ids[i]).toEqual(solo.ids);
        expect(r.ids[i]).toEqual(cases[c].greedy_ids.slice(0, 8));
        r.rows[i].forEach((row, k) => expect(maxDiff(row, solo.rows[k])).toBe(0));
      }
    } finally {
      e.dispose();
    }
  }, 600_000);
});

/**
 * A native batched step of the cases `which` over `steps` steps: each row's tokens and logits bit-identical
 * to its session decoded alone (`solo`: the first case's, already decoded).
 */
async function expectRowsAsAlone(e: Engine, which: number[], steps: number, solo: { ids: number[]; rows: Float32Array[] }): Promise<void> {
  const r = await batched(e, which.map((c) => cases[c].prompt_ids), steps);
  expect(batchedNatively(e, which.map(() => ({ session: undefined as never, token: 0 })))).toBe(true);
  for (const [i, c] of which.entries()) {
    const s = i === 0 ? solo : await alone(e, cases[c].prompt_ids, steps);
    expect(r.ids[i], `row ${i}`).toEqual(s.ids);
    r.rows[i].forEach((row, k) => expect(maxDiff(row, s.rows[k]), `row ${i} step ${k}`).toBe(0));
  }
  r.sessions.forEach((s) => s.dispose());
}

/**
 * tinyA q2 on an engine with `opts` (4 batch rows, profiled) against the f32 matvec engine
 * (vkMvq: false): `look` checks the decode step's dispatch names; the first case's logits within
 * 1e-3 of the f32 engine's over 4 steps; the cases `which` as one batched step each row
 * bit-identical to alone.
 */
async function againstF32(opts: Partial<EngineOptions>, which: number[], look: (names: string[], e: Engine, base: Engine) => void): Promise<void> {
  const model = fixture('tinyA/tinyA-q2.gguf'), common = { model, backend: 'vulkan' as const, ctx: 512, kvTypes: { k: 'f16' as const, v: 'f16' as const } };
  const base = await openEngine({ ...common, vkMvq: false });
  const e = await openEngine({ ...common, batchRows: 4, vkProfile: true, ...opts });
  try {
    const steps = 4;
    const want = await alone(base, cases[which[0]].prompt_ids, steps);
    const solo = await alone(e, cases[which[0]].prompt_ids, steps);
    look((e as VkEngine).profile().map((p) => p.shader), e, base);
    solo.rows.forEach((row, k) => expect(maxDiff(row, want.rows[k]), `step ${k}`).toBeLessThanOrEqual(1e-3));
    await expectRowsAsAlone(e, which, steps, solo);
  } finally {
    base.dispose();
    e.dispose();
  }
}

// mv.comp in place of matvec.comp for the routed experts' types of the q2 model (Q36_VK_MV,
// vkMvTypes): the decode agrees with the matvec engine's within the Vulkan tolerance, and a batched
// row still gets the bits of its session decoded alone (the experts are one-row products in both).
// (A dense weight's type on mv would not: a batched step runs dense weights through the matmuls,
// which sum as matvec does.)
describe('Vulkan batched decode with mv.comp (vkMvTypes)', () => {
  it('the decode steps run mv; logits within 1e-3 of matvec\'s; 3 batched rows bit-identical to alone', () =>
    againstF32({ vkMvTypes: ['q2_k', 'iq2_xxs'], vkMvq: false }, [0, 2, 3], (names) => {
      expect(names.some((n) => n.startsWith('mv_q2_k ffn_down_exps'))).toBe(true);
      expect(names.some((n) => n.startsWith('mv_iq2_xxs ffn_gate_up_exps'))).toBe(true);
      expect(names.filter((n) => /^matvec\d?_(q2_k|iq2_xxs) /.test(n))).toEqual([]);
    }), 600_000);
});

// mvq.comp (int8 activation levels, packed integer dot products; lavapipe has them): the q2 model's
// routed gate+up (IQ2_XXS) and down (Q2_K) products of decode and batched steps run on it, the
// logits agree with the f32 matvec engine's (vkMvq: false) within the Vulkan tolerance, and a
// batched row keeps the bits of its session decoded alone
describe('Vulkan decode with mvq.comp (int8 activation levels)', () => {
  // (batched rows run the dense products through mvq2/mvq4.comp: each row summed as mvq.comp sums it)
  it('the routed experts and dense products run mvq; logits within 1e-3 of the f32 matvec; 3 batched rows bit-identical to alone', () =>
    againstF32({ vkMvq: true }, [1, 2, 3], (names, e, base) => {
      expect(e.describe()).toMatch(/matvecs   decode over int8 activation levels \(mvq\): every product/);
      expect(base.describe()).toMatch(/matvecs   decode over int8 activation levels \(mvq\): none \(Q36_VK_MVQ=0\)/);
      // (the routed pairs through mvqw.comp: mvq.comp's sums in 256-thread workgroups)
      expect(names.some((n) => n.startsWith('mvqw_iq2_xxs ffn_gate_up_exps'))).toBe(true);
      expect(names.some((n) => n.startsWith('mvqw_q2_k ffn_down_exps'))).toBe(true);
      expect(names.filter((n) => n.startsWith('quant')).length).toBe(names.filter((n) => n.startsWith('mvqw_q2_k ffn_down_exps')).length);
      // the dense Q8_0 products over the norms (stacked projections, shared gate+up, LM head) too
      for (const w of ['ssm_in', 'attn_in', 'ffn_gate_up_shexp', 'output']) expect(names.some((n) => n.startsWith(`mvq_q8_0 ${w}`)), w).toBe(true);
    }), 600_000);
});

// bench-batch --check (the H200 record's evidence that batched rows decode what they decode alone):
// every batched session decoded again alone gives the same greedy tokens; sampling is refused
describe('bench-batch --check', () => {
  it('reports each batched session\'s greedy tokens equal to its decode alone; refuses sampling', async () => {
    const { spawnSync } = await import('node:child_process');
    const path = await import('node:path');
    const script = path.resolve(__dirname, '../dist/scripts/bench/bench-batch.js'), model = fixture('tinyA/tinyA-q2.gguf');
    const r = spawnSync(process.execPath, [script, '-m', model, '--sessions', '1,3', '--prompt', '12', '--gen', '5', '--check'], { encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/sessions 3: .*native batched step/);
    expect(r.stdout).toMatch(/check: 3 of 3 sessions decode the same 5 greedy tokens alone as batched/);
    const s = spawnSync(process.execPath, [script, '-m', model, '--sessions', '2', '--temp', '0.6', '--check'], { encoding: 'utf8' });
    expect(s.status).toBe(2);
    expect(s.stderr).toMatch(/--check compares greedy tokens/);
  }, 600_000);
});
