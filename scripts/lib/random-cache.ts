/**
 * A KV cache buffer for the attention benches: `ctx` rows of random values of a cache type, one
 * chunk of 1024 rows written over and over (the benches time reads, not values; generating a
 * 32K-row cache row by row took longer than the runs).
 */
import { KV_TYPE_IDS } from '../../ts/engine/common.js';
import type { KvType } from '../../ts/engine/types.js';
import { rowBytes } from '../../ts/gguf/index.js';
import { type Rng, fillRandom } from '../../ts/model/synth.js';
import type { VkDevice } from '../../ts/vk/addon.js';

export function randomCache(dev: VkDevice, type: KvType, ctx: number, kvDim: number, rng: Rng): number {
  return randomCacheRows(dev, type, ctx, kvDim, rng).buffer;
}

/** randomCache's buffer and the chunk of rows it repeats (row r of the cache is row r % rows of it) */
export function randomCacheRows(dev: VkDevice, type: KvType, ctx: number, kvDim: number, rng: Rng): { buffer: number; chunk: Uint8Array; rows: number } {
  const rb = rowBytes(KV_TYPE_IDS[type], kvDim), rows = 1024;
  const b = dev.createBuffer(ctx * rb, false), chunk = new Uint8Array(rows * rb);
  fillRandom(KV_TYPE_IDS[type], chunk, rows * kvDim, rng, { sigma: 1 });
  for (let r = 0; r < ctx; r += rows) dev.write(b, r * rb, chunk.subarray(0, Math.min(rows, ctx - r) * rb));
  return { buffer: b, chunk, rows };
}
