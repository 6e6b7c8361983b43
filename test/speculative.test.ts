/**
 * Speculative decoding is greedy-exact: a token fed together with drafts in one draft step, and the
 * drafts the model agrees with taken without steps of their own, give the same tokens, the same
 * session and the same next logits as decoding one token a step — whichever drafts are wrong
 * (every position), on the CPU (one forward, then back by the saved state) and on Vulkan
 * (lavapipe: the draft step's rows, then back by the recurrent checkpoints), and through the
 * answer decoder with its forced tokens, stop strings, budgets and grammars landing inside a run
 * of accepted drafts; and sampled decoding with drafts gives the tokens sampled decoding without
 * them gives from the same seed. The reference is the plain decode (whose greedy tokens the oracle
 * tests hold to HF's), never the speculative path's own output.
 */
import * as fs from 'node:fs';
import { spawnSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeAnswer, type AnswerOptions } from '../ts/chat/answer.js';
import type { Drafter } from '../ts/engine/draft/drafter.js';
import { NgramDrafter } from '../ts/engine/draft/ngram.js';
import { OracleDrafter } from '../ts/engine/draft/oracle.js';
import { generate } from '../ts/engine/generate.js';
import { openEngine, type Engine, type EngineOptions, type Session } from '../ts/engine/index.js';
import { jsonGrammar } from '../ts/grammar/grammars.js';
import { fixture, tmpDir } from './helpers.js';

interface Case { prompt_ids: number[]; greedy_ids: number[] }
const casesOf = (m: string) => (JSON.parse(fs.readFileSync(fixture(m, 'reference.json'), 'utf8')).cases as Case[]);
const STEPS = 20;
const K = 4;

/** Plain greedy decode: each step's token and the logits it was chosen from. */
async function plain(e: Engine, prompt: number[], steps: number): Promise<{ ids: number[]; rows: Float32Array[]; tokens: number[] }> {
  const s = e.newSession();
  try {
    await s.eval(prompt);
    const ids: number[] = [], rows: Float32Array[] = [];
    for (let i = 0; i < steps; i++) {
      rows.push(s.logits().slice());
      const id = s.sample({ temperature: 0 });
      ids.push(id);
      await s.eval([id]);
    }
    return { ids, rows, tokens: s.tokens.slice() };
  } finally {
    s.dispose();
  }
}

/** The reference continuation as drafts, the one at draft index `wrong` (or every one: -1) replaced by another token. */
class ScriptDrafter implements Drafter {
  readonly name = 'script';
  constructor(private readonly ref: readonly number[], private readonly vocab: number, private readonly wrong: (step: number, i: number) => boolean) {}
  propose(context: readonly number[], next: number, max: number): number[] {
    const k = context.length + 1;
    if (this.ref[k - 1] !== next) return [];
    return this.ref.slice(k, k + max).map((t, i) => (this.wrong(k, i) ? (t + 1) % this.vocab : t));
  }
}

const maxDiff = (a: Float32Array, b: Float32Array) => { let m = 0; for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i])); return m; };

/**
 * Greedy decode through evalDraft/keepDraft with the reference's drafts, draft `wrong` replaced:
 * every step's logits are compared with the plain decode's (bit for bit: each row is computed as
 * its decode step).
 */
async function drafted(e: Engine, prompt: number[], ref: { ids: number[]; rows: Float32Array[] }, wrong: number): Promise<{ ids: number[]; worst: number; steps: number; session: Session }> {
  const s = e.newSession();
  await s.eval(prompt);
  const ids: number[] = [];
  let worst = 0, steps = 0;
  while (ids.length < STEPS) {
    worst = Math.max(worst, maxDiff(s.logits(), ref.rows[ids.length]));
    const id = s.sample({ temperature: 0 });
    ids.push(id);
    if (ids.length === STEPS) break;
    const drafts = ref.ids.slice(ids.length, ids.length + K).map((t, i) => (i === wrong || wrong === -1 ? (t + 1) % e.shape.nVocab : t));
    const g = await s.evalDraft([id, ...drafts]);
    steps++;
    let m = 0;
    while (m < drafts.length && g[m] === drafts[m] && ids.length < STEPS) ids.push(drafts[m++]);
    await s.keepDraft(1 + m);
  }
  return { ids, worst, steps, session: s };
}

function exactness(name: string, model: string, opts: Partial<EngineOptions>, o: { sampled?: boolean } = {}) {
  describe(`${name}: draft steps are greedy-exact`, () => {
    let e: Engine;
    const cases = casesOf(model.split('/')[0]).slice(0, 3);
    const refs: { ids: number[]; rows: Float32Array[]; tokens: number[] }[] = [];
    beforeAll(async () => {
      e = await openEngine({ model: fixture(model), ctx: 1024, draftMax: 7, ...opts } as EngineOptions);
      for (const c of cases) refs.push(await plain(e, c.prompt_ids, STEPS + 1));
    }, 600_000);
    afterAll(() => e?.dispose());

    it('the session takes 8-row draft steps', () => {
      const s = e.newSession();
      expect(s.draftRows).toBe(8);
      s.dispose();
    });

    // -1: every draft wrong; K: none wrong; 0..K-1: the first rejection at that draft
    it.each([-1, 0, 1, 2, 3, K])('drafts wrong at %i: the tokens, the session and every next-token logits row are the plain decode\'s', async (wrong) => {
      for (const [i, c] of cases.entries()) {
        const r = await drafted(e, c.prompt_ids, refs[i], wrong);
        expect(r.ids, `case ${i}`).toEqual(refs[i].ids.slice(0, STEPS));
        expect(r.worst, `case ${i}: largest logit difference`).toBe(0);
        // the session holds the prompt and the tokens (the last one too when it came as a draft),
        // and goes on as the plain one
        const n = r.session.tokens.length - c.prompt_ids.length;
        expect([STEPS - 1, STEPS]).toContain(n);
        expect(r.session.tokens).toEqual(refs[i].tokens.slice(0, c.prompt_ids.length + n));
        if (n === STEPS - 1) await r.session.eval([r.ids[STEPS - 1]]);
        expect(maxDiff(r.session.logits(), refs[i].rows[STEPS])).toBe(0);
        expect(r.session.sample({ temperature: 0 })).toBe(refs[i].ids[STEPS]);
        r.session.dispose();
      }
    }, 600_000);

    it('every accepted length of an 8-row step (1..8 kept) leaves the session as the plain decode of those tokens', async () => {
      const c = cases[1], ref = refs[1];
      for (let n = 1; n <= 8; n++) {
        const s = e.newSession();
        await s.eval(c.prompt_ids);
        const g = await s.evalDraft(ref.ids.slice(0, 8));
        expect(g).toEqual(ref.ids.slice(1, 9));
        await s.keepDraft(n);
        expect(s.tokens.length).toBe(c.prompt_ids.length + n);
        expect(maxDiff(s.logits(), ref.rows[n])).toBe(0);
        // and decodes on from there as the plain session did
        await s.eval([ref.ids[n]]);
        expect(maxDiff(s.logits(), ref.rows[n + 1])).toBe(0);
        s.dispose();
      }
    }, 600_000);

    // sampled steps: each row's token drawn as the one-token decode would draw it (the same random
    // stream), so the same seed gives the same tokens; drafts from the plain sampled continuation,
    // every third one wrong (runs of accepted drafts and rejections both)
    // (registered only where asked: the other configurations run the same walk's greedy tests)
    if (o.sampled !== false) it.each([
      { temperature: 0.9 },
      { temperature: 0.7, topK: 20, topP: 0.9 },
      { temperature: 1.2, minP: 0.05 },
    ])('sampled steps (%j) with drafts: the same seed gives the tokens it gives without', async (sampling) => {
      for (const [i, c] of cases.entries()) {
        const run = async (draft?: Drafter) => {
          const s = e.newSession();
          try {
            s.seed(1234 + i);
            await s.eval(c.prompt_ids);
            let steps = 0, accepted = 0;
            const r = await generate(s, { maxTokens: 24, sampling, feed: 'non-stop', draft: draft && { drafter: draft, max: K, onStep: (_p, a) => { steps++; accepted += a; } } });
            return { tokens: r.tokens, steps, accepted };
          } finally {
            s.dispose();
          }
        };
        const ref = await run();
        const got = await run(new ScriptDrafter([...c.prompt_ids, ...ref.tokens], e.shape.nVocab, (k, j) => (k + j) % 3 === 0));
        expect(got.tokens, `case ${i}`).toEqual(ref.tokens);
        expect(got.steps, `case ${i}`).toBeGreaterThan(0);
        expect(got.accepted, `case ${i}`).toBeGreaterThan(0);
      }
    }, 600_000);

    it('refusals: too many rows, a step without keepDraft, keepDraft out of range or twice', async () => {
      const s = e.newSession();
      await s.eval(cases[0].prompt_ids);
      await expect(s.evalDraft(new Array(9).fill(1))).rejects.toThrow(/1\.\.8 tokens \(got 9\)/);
      await expect(s.evalDraft([])).rejects.toThrow(/got 0/);
      await expect(s.keepDraft(1)).rejects.toThrow(/no draft step/);
      expect(() => s.sampleDraftRow(0, { temperature: 1 })).toThrow(/no draft step pending/);
      await s.evalDraft([1, 2, 3]);
      expect(() => s.sampleDraftRow(3, { temperature: 1 })).toThrow(/row 3 of 3/);
      await expect(s.eval([4])).rejects.toThrow(/waiting for keepDraft/);
      expect(() => s.sample({ temperature: 0 })).toThrow(/waiting for keepDraft/);
      await expect(s.keepDraft(4)).rejects.toThrow(/4 of 3/);
      await s.keepDraft(2);
      await expect(s.keepDraft(1)).rejects.toThrow(/no draft step/);
      expect(s.tokens.length).toBe(cases[0].prompt_ids.length + 2);
      s.dispose();
    }, 600_000);
  });
}

exactness('CPU tinyA q2 (f32 KV)', 'tinyA/tinyA-q2.gguf', { backend: 'cpu', kvTypes: { k: 'f32', v: 'f32' } });
exactness('CPU tinyR q2 (f16 KV)', 'tinyR/tinyR-q2.gguf', { backend: 'cpu' });
exactness('Vulkan tinyA q2 (q8_0/q4_0 KV)', 'tinyA/tinyA-q2.gguf', { backend: 'vulkan', kvTypes: { k: 'q8_0', v: 'q4_0' } });
// one and two output rows a workgroup (matvec1/matvec2 for decode, matmul2r1… for the draft rows,
// the choice on a GPU for short matrices): still each row's decode bits
// (the sampled walk is the same code whatever the products' rows a workgroup: run once per model)
exactness('Vulkan tinyA q2, 1 row a workgroup', 'tinyA/tinyA-q2.gguf', { backend: 'vulkan', kvTypes: { k: 'q8_0', v: 'q4_0' }, vkMatvecRows: 1 }, { sampled: false });
exactness('Vulkan tinyA q2, 2 rows a workgroup', 'tinyA/tinyA-q2.gguf', { backend: 'vulkan', kvTypes: { k: 'q8_0', v: 'q4_0' }, vkMatvecRows: 2 }, { sampled: false });
exactness('Vulkan tinyR bf16 (f16 KV)', 'tinyR/tinyR-bf16.gguf', { backend: 'vulkan', kvTypes: { k: 'f16', v: 'f16' } });

describe('the answer decoder with drafts: the same answer as without, whatever lands inside an accepted run', () => {
  for (const backend of ['cpu', 'vulkan'] as const) {
    describe(backend, () => {
      let e: Engine;
      const cases = casesOf('tinyA');
      beforeAll(async () => { e = await openEngine({ model: fixture('tinyA/tinyA-q2.gguf'), backend, ctx: 1024, draftMax: 5 }); }, 600_000);
      afterAll(() => e?.dispose());

      /** The answer without drafts, then with the oracle's and with wrong drafts at a few patterns; all must equal. */
      async function same(prompt: number[], o: Partial<AnswerOptions>): Promise<{ draftSteps: number; accepted: number }> {
        const tok = e.tokenizer;
        const answer = async (drafter?: Drafter) => {
          const s = e.newSession();
          await s.eval(prompt);
          let draftSteps = 0, accepted = 0;
          const a = await decodeAnswer(s, tok, { maxTokens: 40, sampling: { temperature: 0 }, ...o, draft: drafter && { drafter, max: 5, onStep: (_p, n) => { draftSteps++; accepted += n; } } });
          const tokens = s.tokens.slice();
          s.dispose();
          return { a, tokens, draftSteps, accepted };
        };
        const ref = await answer();
        const full = [...prompt, ...ref.a.tokens];
        let steps = 0, accepted = 0;
        for (const wrong of [() => false, (k: number, i: number) => i === (k % 5), (k: number) => k % 3 === 0]) {
          const r = await answer(new ScriptDrafter(full, e.shape.nVocab, wrong));
          expect(r.a.tokens).toEqual(ref.a.tokens);
          expect(r.a.raw).toBe(ref.a.raw);
          expect(r.a.parsed).toEqual(ref.a.parsed);
          expect(r.a.finish).toBe(ref.a.finish);
          expect(r.tokens).toEqual(ref.tokens);
          steps += r.draftSteps; accepted += r.accepted;
        }
        return { draftSteps: steps, accepted };
      }

      it('raw text to the token budget: drafts are verified and accepted', async () => {
        const r = await same(cases[0].prompt_ids, { raw: true, stopIds: new Set() });
        expect(r.draftSteps).toBeGreaterThan(0);
        expect(r.accepted).toBeGreaterThan(0);
      }, 600_000);

      it('a thinking budget whose forced close lands inside a run of drafts', async () => {
        for (const budget of [3, 11]) await same(cases[1].prompt_ids, { startInReasoning: true, thinkingBudget: budget, stopIds: new Set() });
      }, 600_000);

      it('a stop string inside a run of drafts ends the answer where it does without them', async () => {
        const s = e.newSession();
        await s.eval(cases[2].prompt_ids);
        const a = await decodeAnswer(s, e.tokenizer, { maxTokens: 30, sampling: { temperature: 0 }, raw: true, stopIds: new Set() });
        s.dispose();
        // a stop string that begins in the middle of the answer
        const stop = a.raw.slice(Math.floor(a.raw.length / 2), Math.floor(a.raw.length / 2) + 3);
        await same(cases[2].prompt_ids, { raw: true, stopIds: new Set(), stop: [stop] });
      }, 600_000);

      it('a grammar (a JSON document): each draft is taken only as the masked greedy choice', async () => {
        await same(cases[3].prompt_ids, { raw: true, grammar: jsonGrammar({ type: 'object', properties: { a: { type: 'integer' }, b: { type: 'string' } }, required: ['a', 'b'] }) });
      }, 600_000);

      it('sampled steps (new sessions draw from seed 0): raw text, and under a JSON grammar each draft taken only as the masked draw', async () => {
        const r = await same(cases[0].prompt_ids, { raw: true, stopIds: new Set(), sampling: { temperature: 0.8, topK: 30 } });
        expect(r.accepted).toBeGreaterThan(0);
        await same(cases[3].prompt_ids, { raw: true, sampling: { temperature: 1 }, grammar: jsonGrammar({ type: 'object', properties: { a: { type: 'integer' }, b: { type: 'string' } }, required: ['a', 'b'] }) });
      }, 600_000);

      it('sampled, with the server\'s greedy protocol: a thinking budget and a forced tool call\'s opening inside runs of drafts', async () => {
        const tools = [{ type: 'function', function: { name: 'weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } }] as never;
        for (const budget of [3, 11]) await same(cases[1].prompt_ids, { startInReasoning: true, thinkingBudget: budget, stopIds: new Set(), sampling: { temperature: 0.9 } });
        await same(cases[2].prompt_ids, { forceToolCall: { name: 'weather' }, greedyProtocol: true, tools, sampling: { temperature: 0.8, topK: 40 } });
      }, 600_000);

      it('a budget that ends inside a run (the last token emitted, not fed, as without drafts)', async () => {
        for (const maxTokens of [7]) await same(cases[4].prompt_ids, { raw: true, stopIds: new Set(), maxTokens, feed: 'not-last' });
      }, 600_000);
    });
  }
});

describe('generate: drafting backs off after rejected drafts, never drafts a stop token', () => {
  it('every draft wrong: after each rejected step the next ones are skipped (doubling), the tokens unchanged', async () => {
    const e = await openEngine({ model: fixture('tinyA/tinyA-q2.gguf'), backend: 'cpu', ctx: 512, draftMax: 4 });
    try {
      const c = casesOf('tinyA')[0];
      const ref = await plain(e, c.prompt_ids, 60);
      const s = e.newSession();
      await s.eval(c.prompt_ids);
      const at: number[] = [];
      const full = [...c.prompt_ids, ...ref.ids];
      const r = await generate(s, { maxTokens: 60, sampling: { temperature: 0 }, draft: { drafter: new ScriptDrafter(full, e.shape.nVocab, () => true), max: 4, onStep: () => at.push(s.tokens.length - c.prompt_ids.length) } });
      expect(r.tokens).toEqual(ref.ids);
      // steps at 1, then skipping 1, 2, 4, 8, 16, 32 steps: 6 draft steps in 60 tokens
      expect(at.length).toBeLessThanOrEqual(7);
      expect(at.length).toBeGreaterThanOrEqual(5);
      s.dispose();
    } finally {
      e.dispose();
    }
  }, 600_000);

  it('drafts are cut before a stop token', async () => {
    const e = await openEngine({ model: fixture('tinyA/tinyA-q2.gguf'), backend: 'cpu', ctx: 512, draftMax: 4 });
    try {
      const c = casesOf('tinyA')[0];
      const ref = await plain(e, c.prompt_ids, 12);
      // the sixth greedy token is declared a stop token: the answer ends there, with or without drafts
      const stopIds = new Set([ref.ids[5]]);
      const seen: number[][] = [];
      const spy: Drafter = { name: 'spy', propose: (ctx, next, max) => { const d = new OracleDrafter(ref.ids, c.prompt_ids.length).propose(ctx, next, max); seen.push(d); return d; } };
      const s = e.newSession();
      await s.eval(c.prompt_ids);
      const r = await generate(s, { maxTokens: 12, sampling: { temperature: 0 }, stopIds, feed: 'non-stop', draft: { drafter: spy, max: 4 } });
      expect(r.tokens).toEqual(ref.ids.slice(0, 6));
      expect(r.stop).toBe('eos');
      expect(s.tokens.length).toBe(c.prompt_ids.length + 5);
      expect(seen.length).toBeGreaterThan(0);
      s.dispose();
    } finally {
      e.dispose();
    }
  }, 600_000);
});

describe('n-gram drafts (prompt lookup)', () => {
  it('the continuation of the latest earlier occurrence of the longest matching n-gram', () => {
    const d = new NgramDrafter({ min: 2, max: 4 });
    // ... 7 8 9 appeared twice before: its latest continuation (1 2) wins
    expect(d.propose([7, 8, 9, 5, 5, 7, 8, 9, 1, 2, 3, 7, 8], 9, 4)).toEqual([1, 2, 3, 7]);
    // at most max, and only as far as the context goes
    expect(d.propose([1, 2, 3, 4, 1, 2], 3, 2)).toEqual([4, 1]);
    expect(d.propose([1, 2, 3, 1, 2], 3, 8)).toEqual([1, 2, 3]);
    // no earlier occurrence of any n-gram of 2+: no guess
    expect(d.propose([1, 2, 3, 4], 5, 4)).toEqual([]);
  });

  it('a rewound or replaced context is indexed again', () => {
    const d = new NgramDrafter();
    expect(d.propose([1, 2, 3, 9, 1, 2], 3, 2)).toEqual([9, 1]);
    // the same length, other tokens: nothing of the old index is used
    expect(d.propose([4, 5, 6, 7, 4, 5], 8, 2)).toEqual([]);
    expect(d.propose([4, 5, 6], 4, 2)).toEqual([]);
    expect(d.propose([4, 5, 6, 4], 5, 2)).toEqual([6, 4]);
  });

  it('refuses lengths that are not 1 ≤ min ≤ max', () => {
    expect(() => new NgramDrafter({ min: 0 })).toThrow(/1 ≤ min ≤ max/);
    expect(() => new NgramDrafter({ min: 3, max: 2 })).toThrow(/1 ≤ min ≤ max/);
  });
});

describe('q36-server with drafts (lavapipe, tinyA q2, 2 slots)', () => {
  const PROMPTS = ['The lighthouse keeper wrote in his log that the storm', 'A recipe for bread begins with flour, water and', 'In the year 2040 the first city on the moon'];
  let engine: Engine;
  beforeAll(async () => { engine = await openEngine({ model: fixture('tinyA/tinyA-q2.gguf'), backend: 'vulkan', ctx: 512, kvTypes: { k: 'q8_0', v: 'q4_0' }, batchRows: 2, sessions: 2, draftMax: 4 }); }, 600_000);
  afterAll(() => engine?.dispose());

  const complete = async (base: string, prompt: string, extra: object = {}) => {
    const r = await fetch(`${base}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'x', prompt, max_tokens: 24, temperature: 0, ...extra }) });
    expect(r.status).toBe(200);
    return ((await r.json()) as { choices: { text: string }[] }).choices[0].text;
  };

  it('greedy completions equal the ones without drafts, served alone or two at once; draft steps show in /metrics', async () => {
    const { buildApp } = await import('../ts/server/app.js');
    // pass 1, no drafts: each request's whole token sequence as the decode loop saw it
    const seqs: number[][] = [];
    const recorder: Drafter = { name: 'rec', propose: (ctx, next) => { seqs.push([...ctx, next]); return []; } };
    const a = await buildApp({ engine, slots: 2, cacheRamMiB: 0, draft: { kind: 'ngram', max: 4, drafter: () => recorder } });
    const base1 = await a.app.listen({ host: '127.0.0.1', port: 0 });
    const alone: string[] = [];
    for (const p of PROMPTS) alone.push(await complete(base1, p));
    await a.app.close(); a.ctx.coordinator.dispose();
    // pass 2: drafts from those sequences, every fourth one wrong
    const full = (ctx: readonly number[]) => seqs.filter((q) => q.length > ctx.length && ctx.every((t, i) => q[i] === t)).sort((x, y) => y.length - x.length)[0];
    const drafter: Drafter = { name: 'known', propose: (ctx, next, max) => { const q = full([...ctx, next]); return q ? q.slice(ctx.length + 1, ctx.length + 1 + max).map((t, i) => ((ctx.length + i) % 4 === 0 ? (t + 1) % engine.shape.nVocab : t)) : []; } };
    const b = await buildApp({ engine, slots: 2, cacheRamMiB: 0, draft: { kind: 'ngram', max: 4, drafter: () => drafter } });
    try {
      const base = await b.app.listen({ host: '127.0.0.1', port: 0 });
      for (const [i, p] of PROMPTS.entries()) expect(await complete(base, p)).toBe(alone[i]);
      const steps = b.ctx.coordinator.stats.draftSteps;
      expect(steps).toBeGreaterThan(0);
      expect(b.ctx.coordinator.stats.accepted).toBeGreaterThan(0);
      // two at once: their tokens share batched steps (no drafts while both generate), the same texts
      const two = await Promise.all(PROMPTS.slice(0, 2).map((p) => complete(base, `${p} `)));
      const ref = [];
      for (const p of PROMPTS.slice(0, 2)) ref.push(await complete(base, `${p} `, { temperature: 0 }));
      expect(two).toEqual(ref);
      const m = await (await fetch(`${base}/metrics`)).text();
      expect(m).toMatch(new RegExp(`q36_draft_steps_total ${b.ctx.coordinator.stats.draftSteps}`));
    } finally {
      await b.app.close(); b.ctx.coordinator.dispose();
    }
    // continued disk saves every 8 tokens while drafts are accepted: each file's text is exactly
    // the tokens it holds (a save waits for the last token of an accepted run to enter)
    const dir = tmpDir('q36-spec-kv-');
    const c = await buildApp({ engine, slots: 2, cacheRamMiB: 0, kvDisk: { dir, spaceMiB: 64, minTokens: 1, continuedIntervalTokens: 8 }, draft: { kind: 'ngram', max: 4, drafter: () => drafter } });
    try {
      const base = await c.app.listen({ host: '127.0.0.1', port: 0 });
      expect(await complete(base, PROMPTS[1])).toBe(alone[1]);
      const { DiskCache } = await import('../ts/server/kv-disk/disk-cache.js');
      const { decodePayload } = await import('../ts/engine/payload.js');
      const disk = new DiskCache({ dir, budgetBytes: 64 << 20, model: (await import('../ts/model/fingerprint.js')).modelIdentity(fixture('tinyA/tinyA-q2.gguf')) });
      const saved = disk.entries().filter((x) => x.header.reason === 'continued');
      expect(saved.length).toBeGreaterThan(0);
      for (const x of saved) {
        const f = disk.load(x.file)!;
        const toks = Array.from(decodePayload(engine.shape, f.payload).tokens);
        // (a token ending inside a UTF-8 character is held back from the text: at most that)
        const d = engine.tokenizer.decode(toks);
        expect(d.startsWith(x.text), `${x.header.tokens} tokens`).toBe(true);
        expect(d.slice(x.text.length)).toMatch(/^\uFFFD*$/);
      }
    } finally {
      await c.app.close(); c.ctx.coordinator.dispose();
    }
  }, 600_000);
});

describe('the command line: --draft ngram [--draft-max N]; the flags checked by name', () => {
  const ROOT = fixture('..');
  const run = (tool: string, ...args: string[]) => spawnSync(process.execPath, [`${ROOT}/dist/ts/cli/${tool}.js`, ...args], { encoding: 'utf8' });
  const model = fixture('tinyA/tinyA-q2.gguf');
  // a prompt that repeats itself: prompt-lookup drafts find what follows its n-grams
  const ids = Array.from({ length: 60 }, (_, i) => [11, 22, 33, 44, 55, 66][i % 6]).join(',');

  it('q36 -p greedy: the same tokens with --draft ngram as without', () => {
    const plain = run('q36', '-m', model, '--cpu', '--prompt-ids', ids, '-n', '40', '--temp', '0');
    const drafted = run('q36', '-m', model, '--cpu', '--prompt-ids', ids, '-n', '40', '--temp', '0', '--draft', 'ngram', '--draft-max', '3');
    expect(plain.status, plain.stderr).toBe(0);
    expect(drafted.status, drafted.stderr).toBe(0);
    const gen = (o: string) => o.split('\n').find((l) => l.startsWith('generated:'));
    expect(gen(drafted.stdout)).toBeDefined();
    expect(gen(drafted.stdout)).toBe(gen(plain.stdout));
  }, 120_000);

  it.each([
    [['--mtp', 'x.gguf'], /--mtp: MTP drafts run in q36 --cpu in this version; here --draft ngram|x\.gguf: cannot open/],
    [['--mtp-draft', '2'], /--mtp-draft needs --mtp/],
    [['--draft-max', '3'], /--draft-max needs --draft/],
    [['--draft', 'oracle'], /--draft must be ngram \(got "oracle"\)/],
    [['--draft', 'ngram', '--draft-max', '8'], /--draft-max must be ≤ 7, got 8/],
  ])('q36 %j is refused: %s', (flags, msg) => {
    for (const tool of ['q36', 'q36-server', 'q36-agent']) {
      const r = run(tool, '-m', model, '--cpu', ...(tool === 'q36' ? ['-p', 'hi'] : tool === 'q36-agent' ? ['--non-interactive', '-p', 'hi'] : []), ...flags);
      expect(r.status, `${tool}: ${r.stderr}`).toBe(2);
      expect(r.stderr, tool).toMatch(msg);
    }
  }, 120_000);

  it('a tool that does not draft refuses the drafting flags rather than ignoring them (q36-eval)', () => {
    for (const flags of [['--draft', 'ngram'], ['--draft-max', '3'], ['--mtp', 'x.gguf']]) {
      const r = run('q36-eval', '-m', model, '--cpu', '--tokens', '64', ...flags);
      expect(r.status, r.stderr).toBe(2);
      expect(r.stderr).toMatch(/--(draft|draft-max|mtp): this tool does not draft/);
    }
  }, 120_000);

  it('q36 at a temperature: --draft ngram gives the tokens sampling without drafts gives from the same seed', () => {
    const go = (...more: string[]) => run('q36', '-m', model, '--cpu', '--prompt-ids', ids, '-n', '40', '--temp', '0.7', '--seed', '7', ...more);
    const plain = go(), drafted = go('--draft', 'ngram', '--draft-max', '3');
    expect(plain.status, plain.stderr).toBe(0);
    expect(drafted.status, drafted.stderr).toBe(0);
    const gen = (o: string) => o.split('\n').find((l) => l.startsWith('generated:'));
    expect(gen(drafted.stdout)).toBeDefined();
    expect(gen(drafted.stdout)).toBe(gen(plain.stdout));
    // (the random model's sampled text does not repeat the prompt: the engine tests above hold the accepted runs)
    expect(drafted.stderr).toMatch(/ngram drafts: \d+ draft steps, \d+ of \d+ drafts accepted/);
  }, 120_000);
});

describe('ChainDrafter (--draft ngram --mtp): the first drafter with a guess wins, each within its own limit', () => {
  it('takes the first non-empty proposal, capped by that part\'s max and the room', async () => {
    const { ChainDrafter } = await import('../ts/engine/draft/chain.js');
    const fixed = (name: string, out: number[]) => ({ name, asked: [] as number[], propose(_c: readonly number[], _n: number, max: number) { this.asked.push(max); return out.slice(0, max); } });
    const a = fixed('a', []), b = fixed('b', [7, 8, 9, 10]);
    const c = new ChainDrafter([{ drafter: a, max: 4 }, { drafter: b, max: 2 }]);
    expect(c.name).toBe('a+b');
    expect(await c.propose([1, 2], 3, 5)).toEqual([7, 8]);
    expect(a.asked).toEqual([4]);
    expect(b.asked).toEqual([2]);
    const first = new ChainDrafter([{ drafter: fixed('x', [5, 6, 7]), max: 4 }, { drafter: b, max: 2 }]);
    expect(await first.propose([1], 2, 2)).toEqual([5, 6]);
    expect(b.asked).toEqual([2]);
  });
});
