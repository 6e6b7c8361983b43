/**
 * The MTP head for one session of a trunk engine, on the trunk's backend (`file`: an MTP-only
 * GGUF, or auto: the trunk's own file), with the trunk's context and KV types. The head's
 * weights load once per trunk engine and file (a runner, head.ts), shared by the heads of every
 * session; each head has its own KV cache.
 */
import { DEFAULT_KV } from '../defaults.js';
import type { Engine } from '../types.js';
import { CpuMtpRunner } from './cpu-mtp.js';
import type { MtpHead, MtpRunner } from './head.js';
import { openMtp } from './mtp-file.js';
import { VkEngine } from '../vulkan/vk-engine.js';
import { VkMtpRunner } from './vk-mtp.js';

const runners = new WeakMap<Engine, Map<string, MtpRunner>>();

/** The runner of `file` for engine e (made on first use, gone with its last head). */
export function mtpRunner(e: Engine, file: string): MtpRunner {
  const path = file === 'auto' ? e.options.model : file;
  let byFile = runners.get(e);
  if (!byFile) runners.set(e, (byFile = new Map()));
  const known = byFile.get(path);
  if (known) return known;
  const m = openMtp(path, e.shape);
  const kvTypes = e.options.kvTypes ?? DEFAULT_KV[e.backend];
  const r: MtpRunner = e instanceof VkEngine
    ? new VkMtpRunner(m, { tokenizer: e.tokenizer, trunk: e.options, kvTypes, room: e.memoryLeft })
    : new CpuMtpRunner(m, { tokenizer: e.tokenizer, ctx: e.options.ctx, kvTypes, chunk: e.options.chunk });
  byFile.set(path, r);
  r.onIdle(() => byFile!.delete(path));
  return r;
}

/** A head (its own KV cache) for one session of engine e. */
export function openHead(e: Engine, file: string): MtpHead {
  return mtpRunner(e, file).open();
}
