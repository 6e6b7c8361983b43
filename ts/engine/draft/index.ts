/**
 * Speculative decoding's drafters by the name a user gives (`--draft ngram`). The measurement
 * drafters (oracle, reject) are q36-bench's own (bench/draft-probe.ts).
 */
import type { DraftOptions } from '../generate.js';
import { NgramDrafter } from './ngram.js';

export type { Drafter } from './drafter.js';
export const DRAFTERS = ['ngram'] as const;

/** The decode loop's draft options for one session's generation (a drafter keeps an index of its context). */
export function draftOptions(spec: { kind: string; max: number }): DraftOptions {
  if (spec.kind !== 'ngram') throw new Error(`unknown drafter "${spec.kind}" (one of ${DRAFTERS.join(', ')})`);
  return { drafter: new NgramDrafter(), max: spec.max };
}
