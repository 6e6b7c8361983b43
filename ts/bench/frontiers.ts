/**
 * The q36-bench method (QuarkStar README, "Benchmarking"): load once, walk a fixed token sequence
 * to each context frontier with incremental prefill (each row measures only the newly added
 * interval), snapshot, decode a fixed greedy probe (EOS ignored), restore, continue.
 */
import type { Engine, Session } from '../engine/types.js';
import { Constraint, type Grammar } from '../grammar/constraint.js';
import type { Tokenizer } from '../tokenizer/tokenizer.js';
import type { ExpertStats } from '../engine/expert-cache.js';
import { draftProbe, type DraftBenchKind, type DraftProbe } from './draft-probe.js';
import { draftOptions, lookupThen } from '../engine/draft/index.js';
import type { MtpDrafter } from '../engine/draft/mtp.js';

/** SSD streaming: what one phase's expert cache did (differences of the engine's counters). */
export interface ExpertPhase { hits: number; misses: number; bytesRead: number; readMs: number; copyMs: number }

export interface FrontierRow {
  frontier: number;
  prefillTokens: number;
  prefillTps: number;
  decodeTokens: number;
  decodeTps: number;
  kvBytes: number;
  residentBytes: number;
  /** SSD streaming only: the expert cache during this row's prefill and its decode probe */
  experts?: { prefill: ExpertPhase; decode: ExpertPhase };
  /**
   * with a grammar: the probe decoded twice from the same state — first with the masks computed
   * as they come (a schema's first request), then again with them cached (the same schema's next
   * requests; decodeTps is this pass)
   */
  grammar?: { cold: GrammarProbe; warm: GrammarProbe; coldTps: number };
  /** with drafts: the probe again with them (decodeTps stays the plain probe's) */
  draft?: DraftProbe;
}

function phase(a: ExpertStats, b: ExpertStats): ExpertPhase {
  return { hits: b.hits - a.hits, misses: b.misses - a.misses, bytesRead: b.bytesRead - a.bytesRead, readMs: b.readMs - a.readMs, copyMs: b.copyMs - a.copyMs };
}

/** One stderr line per row for a streaming engine: hit rate and bytes read, prefill and per decoded token. */
export function expertLine(r: FrontierRow): string | undefined {
  const x = r.experts;
  if (!x) return undefined;
  const rate = (p: ExpertPhase) => `${(100 * p.hits / Math.max(1, p.hits + p.misses)).toFixed(1)}% hits`;
  const mib = (b: number) => `${(b / 2 ** 20).toFixed(1)} MiB`, n = Math.max(1, r.decodeTokens);
  const ms = (p: ExpertPhase, k = 1) => `(reads ${(p.readMs / k).toFixed(1)} ms, copies to the device ${(p.copyMs / k).toFixed(1)} ms)`;
  return `experts at ${r.frontier}: prefill ${rate(x.prefill)}, ${mib(x.prefill.bytesRead)} read ${ms(x.prefill)}; decode ${rate(x.decode)}, ${mib(x.decode.bytesRead / n)} read per token ${ms(x.decode, n)}`;
}

/** Frontier spacing without --step-incr/--step-mul: every 2048 tokens (the QuarkStar README's 2048, 4096, 6144, …). */
export const DEFAULT_STEP_INCR = 2048;

export function frontierList(start: number, max: number, given: { incr?: number; mul?: number }): number[] {
  if (!(start >= 1) || !(max >= start)) throw new Error(`frontiers need 1 ≤ --ctx-start (${start}) ≤ --ctx-max (${max})`);
  if (given.incr !== undefined && given.mul !== undefined) throw new Error('give at most one of --step-incr N or --step-mul F');
  const o = given.incr === undefined && given.mul === undefined ? { incr: DEFAULT_STEP_INCR } : given;
  if (o.incr !== undefined && !(o.incr >= 1)) throw new Error('--step-incr must be ≥ 1');
  if (o.mul !== undefined && !(o.mul > 1)) throw new Error('--step-mul must be > 1');
  const out: number[] = [];
  for (let f = start; f <= max; f = o.incr !== undefined ? f + o.incr : Math.max(f + 1, Math.round(f * o.mul!))) out.push(f);
  return out;
}

/** Repeats `tokens` until at least n. */
export function tokenSequence(tokens: number[], n: number): number[] {
  if (tokens.length === 0) throw new Error('the benchmark prompt tokenizes to nothing');
  const out: number[] = [];
  while (out.length < n) out.push(...tokens.slice(0, n - out.length));
  return out;
}

export interface BenchOptions {
  engine: Engine;
  tokens: number[];
  frontiers: number[];
  genTokens: number;
  warmup: number;
  kvBytesPerToken: number;
  onRow: (r: FrontierRow) => void;
  /**
   * decode the probe under a grammar (greedy among its tokens; a finished document starts the
   * next), its masks over `tokenizer`'s vocabulary
   */
  grammar?: { grammar: Grammar; tokenizer: Tokenizer };
  /** the probe also with drafts (draft-probe.ts), and the draft step's time for 1..rows rows */
  draft?: { kind: DraftBenchKind; max: number; rows: number; mtp?: { file: string; margin: number; max?: number } };
}

export interface GrammarProbe { masks: number; ms: number; sampleMs: number; documents: number }

/** A greedy probe of n tokens under a grammar: each mask computed while the step runs, as the answer decoder does. */
async function grammarProbe(s: Session, n: number, g: { grammar: Grammar; tokenizer: Tokenizer }): Promise<GrammarProbe> {
  let c = new Constraint(g.grammar, g.tokenizer), masks = 0, ms = 0, documents = 0, sampleMs = 0;
  for (let i = 0; i < n; i++) {
    const m = c.mask();
    const t0 = performance.now();
    let id = s.sample({ temperature: 0 }, m);
    sampleMs += performance.now() - t0;
    if (g.tokenizer.stopIds.has(id) || !c.accept(id)) {
      // the document is complete (its end token was chosen): the next one begins
      masks += c.computed; ms += c.computeMs; documents++;
      c = new Constraint(g.grammar, g.tokenizer);
      id = g.tokenizer.encode(' ')[0];
    }
    // the next mask, when cached, goes with the step to the device's arg-max
    const step = s.eval([id], { mask: c.knownMask() });
    c.mask();
    await step;
  }
  return { masks: masks + c.computed, ms: ms + c.computeMs, sampleMs, documents };
}

export async function runFrontiers(o: BenchOptions): Promise<void> {
  const e = o.engine;
  if (o.warmup > 0) {
    const w = e.newSession();
    await w.eval(o.tokens.slice(0, Math.min(o.warmup, o.tokens.length)));
    for (let i = 0; i < 2; i++) await w.eval([w.sample({ temperature: 0 })]);
    w.dispose();
  }
  const s = e.newSession();
  try {
    // MTP drafts: the head follows the session from its first row (the prefills feed its cache),
    // not during the plain probe (whose rate is the one without speculation)
    const mtp = o.draft?.mtp ? draftOptions({ kind: 'mtp', max: o.draft.max, mtp: o.draft.mtp }, { engine: e, session: s }).drafter as MtpDrafter : undefined;
    const drafter = mtp && o.draft?.kind === 'ngram+mtp' ? lookupThen(mtp, o.draft) : mtp;
    let pos = 0;
    for (const f of o.frontiers) {
      const added = f - pos;
      const x0 = e.expertStats?.();
      let t = performance.now();
      await s.eval(o.tokens.slice(pos, f));
      const pre = (performance.now() - t) / 1000;
      const x1 = e.expertStats?.();
      pos = f;
      const snap = s.snapshot();
      t = performance.now();
      let grammar: FrontierRow['grammar'];
      let draft: DraftProbe | undefined;
      let dec: number;
      if (o.grammar) {
        const cold = await grammarProbe(s, o.genTokens, o.grammar);
        const coldS = (performance.now() - t) / 1000;
        s.restore(snap);
        t = performance.now();
        const warm = await grammarProbe(s, o.genTokens, o.grammar);
        dec = (performance.now() - t) / 1000;
        grammar = { cold, warm, coldTps: o.genTokens / coldS };
      } else {
        const ids: number[] = [];
        mtp?.follow(s, false);
        t = performance.now();
        for (let i = 0; i < o.genTokens; i++) { const id = s.sample({ temperature: 0 }); ids.push(id); await s.eval([id]); }
        dec = (performance.now() - t) / 1000;
        mtp?.follow(s, true);
        if (o.draft) draft = await draftProbe(s, snap, { ...o.draft, plain: ids, vocab: e.shape.nVocab, drafter });
      }
      const x2 = e.expertStats?.();
      s.restore(snap); // the probe only wrote KV rows ≥ f: the snapshot is still valid
      o.onRow({
        frontier: f, prefillTokens: added, prefillTps: added / pre, decodeTokens: o.genTokens,
        decodeTps: o.genTokens > 0 ? o.genTokens / dec : 0, kvBytes: f * o.kvBytesPerToken, residentBytes: process.memoryUsage().rss,
        experts: x0 && x1 && x2 ? { prefill: phase(x0, x1), decode: phase(x1, x2) } : undefined, grammar, draft,
      });
    }
  } finally {
    s.dispose();
  }
}

export const CSV_HEADER = 'frontier,prefill_tokens,prefill_tps,decode_tokens,decode_tps,kv_bytes,resident_bytes';
/** With --draft: the drafted probe's rate, its draft steps and the drafts accepted per step. */
export const CSV_DRAFT = ',draft_decode_tps,draft_steps,accepted_per_step';
export function csvRow(r: FrontierRow): string {
  const d = r.draft;
  return [r.frontier, r.prefillTokens, r.prefillTps.toFixed(2), r.decodeTokens, r.decodeTps.toFixed(2), r.kvBytes, r.residentBytes,
    ...(d ? [d.tps.toFixed(2), d.steps, (d.accepted / Math.max(1, d.steps)).toFixed(2)] : [])].join(',');
}

/** The stderr line of a row's drafted probe. */
export function draftLine(r: FrontierRow): string | undefined {
  const d = r.draft;
  if (!d) return undefined;
  return `drafts at ${r.frontier}: ${d.kind}, ${d.tps.toFixed(2)} t/s against ${r.decodeTps.toFixed(2)} without (×${(d.tps / Math.max(1e-9, r.decodeTps)).toFixed(2)}); ${d.steps} draft steps, ${d.accepted} of ${d.proposed} drafts accepted (${(d.accepted / Math.max(1, d.steps)).toFixed(2)} a step); greedy-exact ${d.exact ? 'yes' : 'NO'}; drafter ${d.proposeMs.toFixed(1)} ms in ${d.proposals} proposals; draft step of 1..${d.stepMs.length} rows: ${d.stepMs.map((x) => x.toFixed(2)).join(' / ')} ms`;
}
