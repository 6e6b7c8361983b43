/**
 * Prompt-lookup drafts (`--draft ngram`): when the last few tokens occurred before in the context,
 * guess that what followed them then follows now. Agents' edits, code rewrites and quoted files
 * repeat their context, so these guesses are often right there; they need no extra weights. The
 * longest matching n-gram wins, its latest earlier occurrence first.
 */
import type { Drafter } from './drafter.js';

export interface NgramOptions {
  /** shortest n-gram that may match (default 2) */
  min?: number;
  /** longest n-gram tried first (default 4) */
  max?: number;
}

export class NgramDrafter implements Drafter {
  readonly name = 'ngram';
  private readonly min: number;
  private readonly max: number;
  /** the end position of each n-gram's latest occurrence, by n − min */
  private index: Map<string, number>[] = [];
  /** the context the index covers (a copy of its tokens: a rewound context is re-indexed) */
  private seen: number[] = [];

  constructor(o: NgramOptions = {}) {
    this.min = o.min ?? 2;
    this.max = o.max ?? 4;
    if (!(Number.isInteger(this.min) && this.min >= 1 && Number.isInteger(this.max) && this.max >= this.min)) throw new RangeError(`n-gram drafts: lengths ${this.min}..${this.max} are not 1 ≤ min ≤ max`);
    this.reset();
  }

  private reset(): void {
    this.index = Array.from({ length: this.max - this.min + 1 }, () => new Map());
    this.seen = [];
  }

  /** Indexes the n-grams ending at each new position of `ctx` (from where the index stopped). */
  private update(ctx: readonly number[]): void {
    const n0 = this.seen.length;
    // a context that is not the indexed one continued (a rewind, another conversation): start over
    if (ctx.length < n0 || (n0 > 0 && (ctx[n0 - 1] !== this.seen[n0 - 1] || ctx[0] !== this.seen[0]))) this.reset();
    for (let p = this.seen.length; p < ctx.length; p++) {
      this.seen.push(ctx[p]);
      for (let n = this.min; n <= this.max && n <= p + 1; n++) this.index[n - this.min].set(key(this.seen, p + 1 - n, p + 1), p);
    }
  }

  propose(context: readonly number[], next: number, max: number): number[] {
    if (max < 1) return [];
    this.update(context);
    const all = this.seen, end = all.length + 1;
    const at = (i: number) => (i === all.length ? next : all[i]);
    for (let n = Math.min(this.max, end); n >= this.min; n--) {
      let k = '';
      for (let i = end - n; i < end; i++) k += (i > end - n ? ',' : '') + at(i);
      const p = this.index[n - this.min].get(k);
      // an earlier occurrence ending at p: its continuation, as far as the context goes
      if (p !== undefined && p + 1 < end) {
        const out: number[] = [];
        for (let i = p + 1; i < end && out.length < max; i++) out.push(at(i));
        return out;
      }
    }
    return [];
  }
}

function key(t: readonly number[], from: number, to: number): string {
  let k = '';
  for (let i = from; i < to; i++) k += (i > from ? ',' : '') + t[i];
  return k;
}
