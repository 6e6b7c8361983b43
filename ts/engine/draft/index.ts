/**
 * Speculative decoding's drafters by the name a user gives (`--draft ngram`, `--mtp FILE|auto`, or
 * both: `ngram+mtp`, prompt lookup first). The measurement drafters (oracle, reject) are
 * q36-bench's own (bench/draft-probe.ts).
 */
import type { DraftOptions } from '../generate.js';
import { openHead } from '../mtp/open-head.js';
import type { Engine, Session } from '../types.js';
import { ChainDrafter } from './chain.js';
import { MtpDrafter } from './mtp.js';
import { NgramDrafter } from './ngram.js';

import type { Drafter } from './drafter.js';
export type { Drafter };
export const DRAFTERS = ['ngram'] as const;

/**
 * What the command line asked for: the drafter, the most drafts a step, and for MTP its file,
 * margin and (ngram+mtp: where the two limits differ) the most MTP drafts a step.
 */
export interface DraftSpec { kind: string; max: number; mtp?: { file: string; margin: number; max?: number } }

/**
 * The decode loop's draft options for one session's generation (a drafter keeps an index of its
 * context, or an MTP head in step with it: `session` is followed from now on, so this comes
 * before the session's prompt is evaluated).
 */
export function draftOptions(spec: DraftSpec, on?: { engine: Engine; session: Session }): DraftOptions {
  if (spec.kind === 'ngram') return { drafter: new NgramDrafter(), max: spec.max };
  if ((spec.kind !== 'mtp' && spec.kind !== 'ngram+mtp') || !spec.mtp) throw new Error(`unknown drafter "${spec.kind}" (one of ${DRAFTERS.join(', ')}, mtp, ngram+mtp)`);
  if (!on) throw new Error('MTP drafts follow one session: give it');
  const head = openHead(on.engine, spec.mtp.file);
  const mtp = new MtpDrafter(head, spec.mtp.margin);
  try { mtp.attach(on.session); } catch (e) { head.dispose(); throw e; }
  if (spec.kind === 'mtp') return { drafter: mtp, max: spec.max };
  return { drafter: lookupThen(mtp, spec), max: Math.max(spec.max, spec.mtp.max ?? 0) };
}

/** ngram+mtp: prompt lookup first (within spec.max), `mtp` where the context has no match (within spec.mtp.max). */
export function lookupThen(mtp: Drafter, spec: Pick<DraftSpec, 'max' | 'mtp'>): Drafter {
  return new ChainDrafter([{ drafter: new NgramDrafter(), max: spec.max }, { drafter: mtp, max: spec.mtp?.max ?? spec.max }]);
}
