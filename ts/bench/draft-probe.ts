/**
 * q36-bench's speculative-decoding probe (--draft): at a frontier, the greedy probe once more with
 * drafts — the model's own continuation (oracle: every draft right, the most verifying several
 * tokens a step can give), prompt-lookup drafts (ngram), or drafts that are always wrong (reject:
 * what a bad drafter costs) — checked to give the plain probe's tokens; and the draft step's time
 * for 1..8 rows at that depth.
 */
import type { Drafter } from '../engine/draft/drafter.js';
import { NgramDrafter } from '../engine/draft/ngram.js';
import { OracleDrafter } from '../engine/draft/oracle.js';
import { generate } from '../engine/generate.js';
import type { Session, Snapshot } from '../engine/types.js';

export type DraftBenchKind = 'oracle' | 'ngram' | 'reject' | 'mtp' | 'ngram+mtp';
export const DRAFT_BENCH_KINDS: readonly DraftBenchKind[] = ['oracle', 'ngram', 'reject'];

export interface DraftProbe {
  kind: DraftBenchKind;
  /** tokens per second with drafts */
  tps: number;
  /** draft steps, drafts proposed and accepted */
  steps: number; proposed: number; accepted: number;
  /** the drafted probe's tokens equal the plain probe's */
  exact: boolean;
  /** ms of one draft step of 1..rows rows (a token and rows − 1 drafts, one kept), at this depth */
  stepMs: number[];
  /** the drafter's own time in the probe (its propose calls: an MTP head's runs), and how many calls */
  proposeMs: number; proposals: number;
}

function drafterFor(kind: DraftBenchKind, plain: number[], start: number, vocab: number, given?: Drafter): Drafter {
  if (kind === 'ngram') return new NgramDrafter();
  if (kind === 'mtp' || kind === 'ngram+mtp') {
    if (!given) throw new Error('draft probe: the MTP drafter follows the session from its first row: give it');
    return given;
  }
  const oracle = new OracleDrafter(plain, start);
  if (kind === 'oracle') return oracle;
  // the oracle's drafts, each one off: every draft step is rejected at its first draft
  return { name: 'reject', propose: (ctx, next, max) => oracle.propose(ctx, next, max).map((t) => (t + 1) % vocab) };
}

/** The probe again from `snap` with drafts of `kind` (at most `max` a step); `plain` is the plain probe's tokens. */
export async function draftProbe(s: Session, snap: Snapshot, o: { kind: DraftBenchKind; max: number; plain: number[]; vocab: number; rows: number; drafter?: Drafter }): Promise<DraftProbe> {
  s.restore(snap);
  // the draft step alone: rows 1..rows, a few steps each, every draft rejected (one row kept: the
  // recurrent states copied back), the session a token further each time; first, so that the
  // probe below runs steps already recorded, as a long generation does
  const stepMs: number[] = [];
  for (let rows = 1; rows <= o.rows; rows++) {
    const reps = 6;
    let ms = 0;
    for (let i = 0; i <= reps; i++) {
      const t0 = performance.now();
      const next = s.sample({ temperature: 0 });
      await s.evalDraft([next, ...o.plain.slice(0, rows - 1)]);
      await s.keepDraft(1);
      // the first of each is a warm-up (a new row count records its step)
      if (i > 0) ms += performance.now() - t0;
    }
    stepMs.push(ms / reps);
  }
  s.restore(snap);
  const n = o.plain.length;
  let steps = 0, proposed = 0, accepted = 0;
  const inner = drafterFor(o.kind, o.plain, snap.pos, o.vocab, o.drafter);
  // the drafted probe once before the clock, as a long generation has run many: an MTP head runs
  // on an engine of its own, which makes its pipelines and records a step for each row count it
  // meets on first use (what a drafter proposes does not depend on it: the MTP drafter follows the
  // session's tokens, back over the restore)
  await generate(s, { maxTokens: n, sampling: { temperature: 0 }, feed: 'all', draft: { drafter: inner, max: o.max } });
  s.restore(snap);
  let proposeMs = 0, proposals = 0;
  const drafter: Drafter = {
    name: inner.name,
    propose: async (context, next, max) => {
      const t0 = performance.now();
      try { return await inner.propose(context, next, max); } finally { proposeMs += performance.now() - t0; proposals++; }
    },
  };
  const t = performance.now();
  // feed 'all': every token enters the session, as the plain probe's do
  const r = await generate(s, { maxTokens: n, sampling: { temperature: 0 }, feed: 'all', draft: { drafter, max: o.max, onStep: (p, a) => { steps++; proposed += p; accepted += a; } } });
  const tps = n / ((performance.now() - t) / 1000);
  const exact = r.tokens.length === n && r.tokens.every((x, i) => x === o.plain[i]);
  return { kind: o.kind, tps, steps, proposed, accepted, exact, stepMs, proposeMs, proposals };
}
