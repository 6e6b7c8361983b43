/**
 * Speculative decoding's drafters by the name a user gives (`--draft ngram`, `--mtp FILE|auto`).
 * The measurement drafters (oracle, reject) are q36-bench's own (bench/draft-probe.ts).
 */
import { DEFAULT_KV } from '../defaults.js';
import type { DraftOptions } from '../generate.js';
import { CpuMtpHead } from '../mtp/cpu-mtp.js';
import { openMtp } from '../mtp/mtp-file.js';
import type { Engine, Session } from '../types.js';
import { MtpDrafter } from './mtp.js';
import { NgramDrafter } from './ngram.js';

export type { Drafter } from './drafter.js';
export const DRAFTERS = ['ngram'] as const;

/** What the command line asked for: the drafter, the most drafts a step, and for MTP its file and margin. */
export interface DraftSpec { kind: string; max: number; mtp?: { file: string; margin: number } }

/**
 * The decode loop's draft options for one session's generation (a drafter keeps an index of its
 * context, or an MTP head in step with it: `session` is followed from now on, so this comes
 * before the session's prompt is evaluated).
 */
export function draftOptions(spec: DraftSpec, on?: { engine: Engine; session: Session }): DraftOptions {
  if (spec.kind === 'ngram') return { drafter: new NgramDrafter(), max: spec.max };
  if (spec.kind !== 'mtp' || !spec.mtp) throw new Error(`unknown drafter "${spec.kind}" (one of ${DRAFTERS.join(', ')}, mtp)`);
  if (!on) throw new Error('MTP drafts follow one session: give it');
  const e = on.engine;
  if (e.backend !== 'cpu') throw new Error('--mtp drafts on the CPU engine in this version (--cpu); on Vulkan, --draft ngram');
  const head = new CpuMtpHead(openMtp(spec.mtp.file === 'auto' ? e.options.model : spec.mtp.file, e.shape), { tokenizer: e.tokenizer, ctx: e.options.ctx, kvTypes: e.options.kvTypes ?? DEFAULT_KV.cpu, chunk: e.options.chunk });
  const drafter = new MtpDrafter(head, spec.mtp.margin);
  drafter.attach(on.session);
  return { drafter, max: spec.max };
}
