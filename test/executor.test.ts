/**
 * The server's executor (ts/server/executor.ts): one model call at a time; decode tokens of the
 * generating sessions coalesce into one step; prefills go in quanta of 2048 tokens while nothing
 * decodes and 128 while anything does, interleaved with the decode steps — so a long prompt does
 * not stall a generating session.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openEngine, type Engine, type Session } from '../ts/engine/index.js';
import { ModelExecutor } from '../ts/server/executor.js';
import { fixture } from './helpers.js';

let e: Engine;
beforeAll(async () => { e = await openEngine({ model: fixture('tinyA/tinyA-q2.gguf'), backend: 'cpu', ctx: 4096 }); });
afterAll(() => e?.dispose());

/** Records the token count of every eval call of s, and when it happened relative to others. */
function watch(s: Session, name: string, log: string[]): void {
  const ev = s.eval.bind(s);
  s.eval = (tokens, o) => { log.push(`${name}:${tokens.length}`); return ev(tokens, o); };
}

const prompt = (n: number, seed: number) => Array.from({ length: n }, (_, i) => 1 + ((i * 37 + seed) % 900));

describe('ModelExecutor', () => {
  it('a prefill runs in 2048-token quanta while nothing decodes', async () => {
    const x = new ModelExecutor(e), s = e.newSession(), log: string[] = [];
    watch(s, 'p', log);
    await x.prefill(s, prompt(3000, 1));
    expect(log).toEqual(['p:2048', 'p:952']);
    expect(s.tokens.length).toBe(3000);
    s.dispose();
  });

  it('while a session generates, a long prefill goes in 128-token quanta between its decode steps', async () => {
    const x = new ModelExecutor(e), d = e.newSession(), p = e.newSession(), log: string[] = [];
    await d.eval(prompt(20, 2));
    watch(d, 'd', log);
    watch(p, 'p', log);
    x.beginDecode(d);
    // the decoder: 12 tokens, each through the executor (its next token follows the last step)
    const decoding = (async () => { for (let i = 0; i < 12; i++) await x.decode(d, d.sample({ temperature: 0 })); })();
    const prefill = x.prefill(p, prompt(600, 3));
    await Promise.all([decoding, prefill]);
    x.endDecode(d);
    const quanta = log.filter((l) => l.startsWith('p:')).map((l) => Number(l.slice(2)));
    expect(quanta.reduce((a, b) => a + b, 0)).toBe(600);
    expect(quanta.length).toBeGreaterThanOrEqual(5); // 600 tokens in quanta of ≤ 128
    // while the decoder was generating, no quantum exceeded 128 tokens
    const lastDecode = log.lastIndexOf(log.filter((l) => l.startsWith('d:')).pop()!);
    log.slice(0, lastDecode).filter((l) => l.startsWith('p:')).forEach((l) => expect(Number(l.slice(2))).toBeLessThanOrEqual(128));
    // and decode steps ran between the quanta (the prompt did not stall the generation)
    const firstP = log.findIndex((l) => l.startsWith('p:')), lastP = log.map((l) => l.startsWith('p:')).lastIndexOf(true);
    expect(log.slice(firstP, lastP).some((l) => l.startsWith('d:'))).toBe(true);
    expect(d.tokens.length).toBe(32);
    expect(p.tokens.length).toBe(600);
    d.dispose(); p.dispose();
  }, 120_000);

  it('the decode tokens of several generating sessions go into shared steps; the results are each session\'s own', async () => {
    const x = new ModelExecutor(e), ss = [e.newSession(), e.newSession(), e.newSession()];
    const alone: number[][] = [];
    for (let i = 0; i < 3; i++) {
      const s = e.newSession();
      await s.eval(prompt(10 + i, 10 + i));
      const out: number[] = [];
      for (let k = 0; k < 6; k++) { const id = s.sample({ temperature: 0 }); out.push(id); await s.eval([id]); }
      alone.push(out);
      s.dispose();
    }
    for (const [i, s] of ss.entries()) { await s.eval(prompt(10 + i, 10 + i)); x.beginDecode(s); }
    const got = await Promise.all(ss.map(async (s) => {
      const out: number[] = [];
      for (let k = 0; k < 6; k++) { const id = s.sample({ temperature: 0 }); out.push(id); await x.decode(s, id); }
      x.endDecode(s);
      return out;
    }));
    expect(got).toEqual(alone);
    // 18 tokens in (about) 6 steps: each step took every generating session
    expect(x.stats.rows).toBe(18);
    expect(x.stats.steps).toBeLessThanOrEqual(8);
    expect(x.stats.largest).toBe(3);
    ss.forEach((s) => s.dispose());
  }, 120_000);

  it('exclusive turns run one at a time, in arrival order', async () => {
    const x = new ModelExecutor(e), order: string[] = [];
    let inside = 0;
    const job = (name: string, ms: number) => x.run(async () => {
      inside++;
      expect(inside).toBe(1);
      order.push(name);
      await new Promise((r) => setTimeout(r, ms));
      inside--;
      return name;
    });
    expect(await Promise.all([job('a', 20), job('b', 1), job('c', 5)])).toEqual(['a', 'b', 'c']);
    expect(order).toEqual(['a', 'b', 'c']);
    // a failing turn rejects its caller only
    await expect(x.run(() => { throw new Error('boom'); })).rejects.toThrow('boom');
    expect(await x.run(() => 7)).toBe(7);
  });
});
