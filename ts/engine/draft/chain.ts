/**
 * Two drafters in turn (`--draft ngram --mtp FILE`): the first one's guesses where it has any,
 * else the second's — prompt lookup where the answer repeats its context (free, often long runs),
 * the MTP head elsewhere. Each keeps its own limit of drafts a step.
 */
import type { Drafter } from './drafter.js';

export class ChainDrafter implements Drafter {
  readonly name: string;

  constructor(private readonly parts: { drafter: Drafter; max: number }[]) {
    this.name = parts.map((p) => p.drafter.name).join('+');
  }

  async propose(context: readonly number[], next: number, max: number): Promise<number[]> {
    for (const p of this.parts) {
      const d = await p.drafter.propose(context, next, Math.min(max, p.max));
      if (d.length > 0) return d;
    }
    return [];
  }
}
