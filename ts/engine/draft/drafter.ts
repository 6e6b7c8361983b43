/**
 * Where drafted tokens come from (speculative decoding): a drafter proposes the tokens it guesses
 * follow the context, and the decode loop (generate.ts) has the model verify them in one draft
 * step, keeping the ones it would have chosen itself. A drafter only guesses: a wrong guess costs
 * time, never a different answer.
 */
export interface Drafter {
  /** short name for reports (ngram, oracle, mtp) */
  readonly name: string;
  /**
   * Up to `max` tokens guessed to follow `context` and then `next` (the token about to enter the
   * session); fewer, or none, when it has no guess. (A drafter with a model of its own, MTP,
   * answers asynchronously.)
   */
  propose(context: readonly number[], next: number, max: number): number[] | Promise<number[]>;
}

/**
 * Steps (or proposals) to skip after the misses-th fruitless one in a row: 1, 2, 4 … up to 32 —
 * generate's after draft steps whose drafts were all rejected, the MTP drafter's after proposals
 * its margin stopped before a draft (each runs its head).
 */
export function backOff(misses: number): number {
  return Math.min(32, 2 ** (misses - 1));
}
