/**
 * Oracle drafts (`q36-bench --draft oracle`): the model's own greedy continuation, computed
 * beforehand, proposed as drafts — every one is accepted, so a run measures what verifying
 * several tokens per step can give at most (the mechanics, on a random model whose own drafts
 * would never be right).
 */
import type { Drafter } from './drafter.js';

export class OracleDrafter implements Drafter {
  readonly name = 'oracle';

  /** `continuation`: the greedy tokens that follow a context of `start` tokens */
  constructor(private readonly continuation: readonly number[], private readonly start: number) {}

  propose(context: readonly number[], next: number, max: number): number[] {
    // `next` is generated token k − 1 of the continuation: drafts are k onwards
    const k = context.length + 1 - this.start;
    if (k < 1 || this.continuation[k - 1] !== next) return [];
    return this.continuation.slice(k, k + max);
  }
}
