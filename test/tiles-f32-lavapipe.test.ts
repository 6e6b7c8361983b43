/**
 * The f32 register-tile experiments (scripts/experiments/tiles-f32: mm.glsl with 8 rows and/or 8
 * tokens a thread) compute every output as mm does, the same FMA chain in the same order, so
 * their outputs must equal mm's bit for bit: dense plain and GLU (a partial row tile: 320 rows),
 * routed gate+up (iq2_xxs) and down (q2_k), over one and two token tiles. Timings on lavapipe
 * mean nothing; bench-mmc --variant-of mm times them on a GPU.
 */
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../ts/paths.js';

describe('f32 register-tile experiments', () => {
  it('build', () => {
    const r = spawnSync('bash', ['scripts/experiments/tiles-f32/build.sh'], { cwd: ROOT, encoding: 'utf8' });
    expect(r.status, `${r.stdout}\n${r.stderr}`).toBe(0);
  }, 300_000);
  for (const v of ['ma', 'mb', 'mc']) {
    it(`${v} equals mm bit for bit in every form`, () => {
      const r = spawnSync('node', ['dist/scripts/bench/bench-mmc.js', '--small', '--variant-of', 'mm', '--variant', v, '--variant-spv', 'build/runtime-shaders/f32', '--tokens', '37,100', '--reps', '1'], { cwd: ROOT, encoding: 'utf8', timeout: 600_000 });
      expect(r.status, `${r.stdout}\n${r.stderr}`).toBe(0);
      const rows = r.stdout.split('\n').filter((l) => / T=\d+ /.test(l));
      expect(rows.length, r.stdout).toBe(8);
      for (const l of rows) {
        // the variant's module ran (not the engine's, which a missing form would fall back to)
        expect(l, l).toMatch(new RegExp(`\\b${v}_(moe_)?(q8_0|iq2_xxs|q2_k) `));
        expect(l, l).toMatch(/max \|Δ\|\/\|y\| 0\.00e\+0$/);
      }
    }, 600_000);
  }
});
