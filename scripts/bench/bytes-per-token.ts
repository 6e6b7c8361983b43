/**
 * The bytes-per-token model of decode: weights a decode step must read (every dense tensor once,
 * the LM head, the routers, and top-k routed experts per layer) plus the KV rows attention reads
 * at a given context. Used to report decode speed as a fraction of the memory-bandwidth floor.
 */
import type { GgufFile } from '../../ts/gguf/index.js';
import { requiredTensors, type ModelShape } from '../../ts/model/shape.js';
import { kvBytesPerToken } from '../../ts/engine/payload.js';
import type { KvType } from '../../ts/engine/types.js';

export function decodeBytes(f: GgufFile, s: ModelShape, ctx: number, kv: { k: KvType; v: KvType }): { weights: number; kv: number } {
  let weights = 0;
  for (const r of requiredTensors(s)) {
    if (r.name === 'token_embd.weight') continue; // one row per token: negligible
    const t = f.tensorByName.get(r.name)!;
    weights += /_exps\.weight$/.test(r.name) ? (t.nbytes / s.nExpert) * s.nExpertUsed : t.nbytes;
  }
  const kvBytes = ctx * kvBytesPerToken(s, kv);
  return { weights, kv: kvBytes };
}
