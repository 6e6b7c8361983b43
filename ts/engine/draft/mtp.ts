/**
 * MTP drafts (`--mtp FILE|auto`): the model's own multi-token-prediction head guesses the next
 * tokens. Its KV cache follows the session: every row the trunk evaluates comes back with its
 * hidden state (Session.observeHidden), and before drafting the head runs the rows it has not
 * seen, row k being token x_k with the trunk's hidden state h_{k−1}. A draft then chains: the
 * token about to enter the session with the last hidden state, each drafted token with the head's
 * own hidden state. The chain stops where the head's top probability falls below the margin.
 * Only the hidden states the head has not consumed are kept (and the last one, which a draft
 * starts from): a long prompt's rows go through the head as they arrive, CATCH_UP rows at a time,
 * so a 32K-token prompt does not hold 32K hidden states (256 MiB for the real model).
 */
import { firstMax } from '../common.js';
import type { MtpHead } from '../mtp/head.js';
import type { Session } from '../types.js';
import { backOff, type Drafter } from './drafter.js';

/** Unconsumed hidden states that make the head catch up while the session evaluates (not at the next draft). */
const CATCH_UP = 512;

export class MtpDrafter implements Drafter {
  readonly name = 'mtp';
  /** the session's evaluated tokens and their hidden states, as reported (undefined: not seen) */
  private toks: number[] = [];
  private hid: (Float32Array | undefined)[] = [];
  /** head KV rows computed from true inputs: positions [0, headLen) */
  private headLen = 0;
  /** hidden states before this position have been dropped (consumed by the head) */
  private dropped = 0;
  /**
   * proposals in a row that the margin stopped before a draft, and proposals still to skip (each
   * proposal runs the head, so an unsure head would otherwise cost its runs on every token)
   */
  private unsure = 0;
  private skip = 0;

  /** `margin`: the least top probability that lets a draft chain go on (0: none) */
  constructor(private readonly head: MtpHead, private readonly margin = 0) {}

  /** Follows `s` from now on (before its prompt is evaluated, so the head sees every row); the head goes with s. */
  attach(s: Session): void {
    this.follow(s, true);
    s.onDispose(() => this.head.dispose());
  }

  /**
   * Stops (or resumes) following s: rows evaluated meanwhile stay unseen, as a loaded session's
   * (q36-bench's plain probe runs without the head's costs; the drafted probe restarts before them)
   */
  follow(s: Session, on: boolean): void {
    s.observeHidden(on ? (pos, tokens, hidden) => this.seen(pos, tokens, hidden) : undefined);
  }

  private truncate(n: number): void {
    if (this.toks.length > n) { this.toks.length = n; this.hid.length = n; }
    this.headLen = Math.min(this.headLen, n);
    this.dropped = Math.min(this.dropped, n);
  }

  private async seen(pos: number, tokens: readonly number[], hidden: Float32Array): Promise<void> {
    const n = this.head.nEmbd;
    this.truncate(pos);
    // rows the drafter never saw (a loaded session) stay unknown
    while (this.toks.length < pos) { this.toks.push(-1); this.hid.push(undefined); }
    tokens.forEach((t, i) => { this.toks.push(t); this.hid.push(hidden.slice(i * n, (i + 1) * n)); });
    // a long evaluation: the head takes the rows now (rows of a loaded session's unknown tokens wait for propose())
    const end = this.toks.length;
    if (end - this.headLen > CATCH_UP && this.toks.indexOf(-1, this.headLen) < 0) await this.runRows(end);
  }

  /**
   * Head rows [headLen, to) from the known tokens, row k with h_{k−1} (an unseen one counts as
   * zero: the head's guesses get worse, never the answer); then every hidden state before
   * h_{to−1} is dropped (a rewind below it makes that row's input zero).
   */
  private async runRows(to: number): Promise<void> {
    const N = this.head.nEmbd, zero = new Float32Array(N);
    for (let p = this.headLen, T = 0; p < to; p += T) {
      // runs of a power of two rows (or the most a run takes): a head records a step for each
      // row count it meets, and the rows between two proposals vary with every back-off
      T = Math.min(this.head.maxRowsNoLogits, 2 ** Math.floor(Math.log2(to - p)));
      const inp = new Float32Array(T * N);
      for (let i = 0; i < T; i++) inp.set((p + i > 0 ? this.hid[p + i - 1] : undefined) ?? zero, i * N);
      // only the head's KV rows are wanted: no logits
      await this.head.run(this.toks.slice(p, p + T), inp, p, T);
    }
    this.headLen = Math.max(this.headLen, to);
    for (let k = this.dropped; k < to - 1; k++) this.hid[k] = undefined;
    this.dropped = Math.max(this.dropped, to - 1);
  }

  async propose(context: readonly number[], next: number, max: number): Promise<number[]> {
    const n = context.length, N = this.head.nEmbd;
    if (max < 1 || n === 0) return [];
    // an unsure head backs off (its rows catch up at the next proposal)
    if (this.skip > 0) { this.skip--; return []; }
    // what the drafter knows must be the session's tokens (a rewind or a loaded state: start over there)
    let m = 0;
    while (m < Math.min(n, this.toks.length) && this.toks[m] === context[m]) m++;
    this.truncate(m);
    while (this.toks.length < n) { this.toks.push(context[this.toks.length]); this.hid.push(undefined); }
    await this.runRows(n);
    const zero = new Float32Array(N);
    const out: number[] = [];
    let tok = next, hidden = this.hid[n - 1] ?? zero;
    for (let i = 0; i < max; i++) {
      const r = await this.head.run([tok], hidden, n + i);
      const row = r.logits[0], best = firstMax(row);
      if (this.margin > 0) {
        // the top probability is 1/z, z = Σ e^(l − l_top); the sum only grows, so it stops once
        // the chain is decided to stop (an unsure head's row is short work)
        const zMax = 1 / this.margin, top = row[best];
        let z = 0;
        for (let v = 0; v < row.length && z <= zMax; v++) z += Math.exp(row[v] - top);
        if (z > zMax) break;
      }
      out.push(best);
      tok = best;
      hidden = r.hidden;
    }
    // row n (the token about to enter, with h_{n−1}) is a true row; the deeper ones are overwritten later
    this.headLen = n + 1;
    if (out.length === 0) this.skip = backOff(++this.unsure);
    else this.unsure = 0;
    return out;
  }
}
