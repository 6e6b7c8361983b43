/**
 * The geometry sweep (scripts/lib/geometries.ts) on lavapipe: Vulkan against the CPU reference
 * with the same KV types — all-position logits after prefills of 1, 17, 64 and 65
 * tokens (513 on the first geometry), a decode continuation, payloads across backends — within
 * the oracle tolerance; geometries past the kernels' limits refused at load by name.
 * Then models mixing every block type (recipe `mixed`) and the IQ2_M / IQ1_M-like mixes.
 * On a GPU: node dist/scripts/geometry-sweep.js (recorded in docs/vulkan.md).
 */
import * as fs from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import * as path from 'node:path';
import { compareBackends, passes } from '../scripts/lib/backend-compare.js';
import { openEngine } from '../ts/engine/index.js';
import { PRESETS, makeModel, type Recipe } from '../ts/model/synthetic-model.js';
import { SWEEP } from '../scripts/lib/geometries.js';
import { runGeometry } from '../scripts/lib/sweep-run.js';
import { tmpDir } from './helpers.js';

const dir = tmpDir();
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

describe('Vulkan matches the CPU on every geometry, or refuses it by name', () => {
  SWEEP.forEach((sg, i) => {
    it(sg.name, async () => {
      const r = await runGeometry(sg, { dir, prefills: i === 0 ? [1, 17, 64, 65, 513] : [1, 17, 64, 65], decode: 4 });
      if (sg.refuse) {
        expect(r.refused).toMatch(sg.refuse);
        return;
      }
      for (const x of r.results) {
        console.log(`${sg.name}: ${x.what}: max ${x.max.toExponential(2)} p99 ${x.p99.toExponential(2)} (${x.positions} positions)`);
        expect(passes(x), `${sg.name}: ${x.what}: p99 ${x.p99}, ${(100 * x.above).toFixed(1)}% above`).toBe(true);
      }
    }, 600_000);
  });
});

describe('models mixing block types run on both backends within the oracle tolerance', () => {
  // mixed: every block type, gate/up of different types, unstackable projections; iq2m/iq1m: the
  // community mixes' types with fused gate+up; the q8_0/q4_0 KV default on both sides
  it.each(['mixed', 'iq2m', 'iq1m'] as Recipe[])('%s', async (recipe) => {
    const file = path.join(dir, `tiny-${recipe}.gguf`);
    makeModel({ out: file, geometry: PRESETS.tiny, recipe, seed: 5 });
    const o = { model: file, ctx: 256, kvTypes: { k: 'q8_0', v: 'q4_0' } } as const;
    const vk = await openEngine({ ...o, backend: 'vulkan' }), cpu = await openEngine({ ...o, backend: 'cpu' });
    try {
      for (const x of await compareBackends(cpu, vk, { prefills: [1, 65, 130], decode: 4, vocab: 1000 })) {
        console.log(`${recipe}: ${x.what}: max ${x.max.toExponential(2)} p99 ${x.p99.toExponential(2)}`);
        expect(passes(x), `${recipe}: ${x.what}: p99 ${x.p99}`).toBe(true);
      }
    } finally { vk.dispose(); cpu.dispose(); }
  }, 600_000);
});
