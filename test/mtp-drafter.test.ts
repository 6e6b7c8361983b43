/**
 * The MTP drafter's bookkeeping with a scripted head (no engine): the rows its head runs, in what
 * row counts, and the back-off of a head that the margin finds unsure.
 */
import { describe, expect, it } from 'vitest';
import { MtpDrafter } from '../ts/engine/draft/mtp.js';
import type { MtpHead, MtpRows } from '../ts/engine/mtp/head.js';

const N = 4, VOCAB = 8;

/** A head whose every row's logits are `row` (flat: unsure; one high value: sure), recording its runs. */
function scriptedHead(row: () => Float32Array) {
  const runs: { pos: number; T: number; logits: boolean }[] = [];
  const head: MtpHead = {
    nEmbd: N, maxRows: 4, maxRowsNoLogits: 64,
    async run(tokens, hidden, pos, logitsFrom = 0): Promise<MtpRows> {
      expect(hidden.length).toBe(tokens.length * N);
      runs.push({ pos, T: tokens.length, logits: logitsFrom < tokens.length });
      return { logits: tokens.slice(logitsFrom).map(() => row()), hidden: new Float32Array(tokens.length * N) };
    },
    dispose() {},
  };
  return { head, runs };
}

const flat = () => new Float32Array(VOCAB);
const sure = () => { const r = new Float32Array(VOCAB).fill(-30); r[3] = 0; return r; };
const ctx = (n: number) => Array.from({ length: n }, (_, i) => i % VOCAB);

describe('MtpDrafter', () => {
  it('catches its head up in runs of a power of two rows (at most maxRowsNoLogits), every row once, in order', async () => {
    const { head, runs } = scriptedHead(sure);
    const d = new MtpDrafter(head);
    expect(await d.propose(ctx(100), 1, 2)).toEqual([3, 3]);
    const catchUp = runs.filter((r) => !r.logits);
    expect(catchUp.map((r) => r.T)).toEqual([64, 32, 4]);
    expect(catchUp.map((r) => r.pos)).toEqual([0, 64, 96]);
    // 13 tokens later (no session reports its rows here, so row 100 runs again with its true token): 8 + 4 + 1 rows
    runs.length = 0;
    await d.propose(ctx(113), 1, 1);
    expect(runs.filter((r) => !r.logits).map((r) => [r.pos, r.T])).toEqual([[100, 8], [108, 4], [112, 1]]);
  });

  it('an unsure head (stopped by the margin before its first draft) backs off 1, 2, 4 … 32 proposals; a sure one proposes every time', async () => {
    let unsure = true;
    const { head, runs } = scriptedHead(() => (unsure ? flat() : sure()));
    const d = new MtpDrafter(head, 0.5);
    const ran: number[] = [];
    for (let k = 0; k < 80; k++) {
      const before = runs.filter((r) => r.logits).length;
      expect(await d.propose(ctx(10 + k), 1, 2)).toEqual([]);
      if (runs.filter((r) => r.logits).length > before) ran.push(k);
    }
    // skips after each unsure proposal: 1, 2, 4, 8, 16, 32, 32
    expect(ran).toEqual([0, 2, 5, 10, 19, 36, 69]);
    // the rows skipped meanwhile all reach the head's cache at the next proposal that runs
    const rows = runs.filter((r) => !r.logits).reduce((a, r) => a + r.T, 0) + runs.filter((r) => r.logits).length;
    expect(rows).toBeGreaterThanOrEqual(10 + 69 + 1);
    // sure again: drafts from the next proposal that runs on, every time
    unsure = false;
    const out: number[][] = [];
    for (let k = 80; k < 120; k++) out.push(await d.propose(ctx(10 + k), 1, 2));
    const first = out.findIndex((o) => o.length > 0);
    expect(first).toBeLessThanOrEqual(32);
    expect(out.slice(first).every((o) => o.length === 2)).toBe(true);
  });
});
