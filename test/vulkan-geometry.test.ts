/**
 * The geometry sweep (scripts/lib/geometries.ts) on lavapipe: Vulkan against the CPU reference
 * with the same KV types — all-position logits after prefills of 1, 17, 64 and 65
 * tokens (513 on the first geometry), a decode continuation, payloads across backends — within
 * the oracle tolerance; geometries past the kernels' limits refused at load by name.
 * On a GPU: node dist/scripts/check/geometry-sweep.js (recorded in docs/vulkan.md).
 */
import * as fs from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { passes } from '../scripts/lib/backend-compare.js';
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

