/**
 * Chunked prefill of 512 and 2048 tokens (one step each; several attention blocks) equals
 * token-by-token decode on the Vulkan backend. On lavapipe this runs on tinyA, whose decode steps
 * are the cheapest (~70 ms each: 2048 of them take minutes, hence a file of its own, run in its
 * own fork beside the others); with Q36_VK_FULL=1 (a GPU) on tinyR, the real head sizes.
 */
import { describe, expect, it } from 'vitest';
import { openEngine } from '../ts/engine/index.js';
import { prefillVsDecode } from '../scripts/check/prefill-check.js';
import { fixture } from './helpers.js';

const FULL = process.env.Q36_VK_FULL === '1';
const model = FULL ? 'tinyR' : 'tinyA';

describe(`Vulkan prefill equals token-by-token decode at 512 and 2048 tokens (${model} q2)`, () => {
  // 512 tokens in 512-token steps (the default on small devices), 2048 in one 2048-token step
  // (the default on devices with ≥ 32 GiB: defaults.ts vulkanChunk)
  it.each([512, 2048])('%i tokens', async (n) => {
    const e = await openEngine({ model: fixture(`${model}/${model}-q2.gguf`), backend: 'vulkan', ctx: 2100, kvTypes: { k: 'q8_0', v: 'q4_0' }, chunk: n });
    try {
      const m = await prefillVsDecode(e, n);
      console.log(`vulkan prefill ${n} (${model}): max |chunked − token-by-token| = ${m.toExponential(2)}`);
      expect(m).toBeLessThanOrEqual(1e-3);
    } finally {
      e.dispose();
    }
  }, 1_800_000);
});
