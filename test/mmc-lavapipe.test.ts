/**
 * The matrix-unit matmuls' logic without a GPU: mmc.glsl built with 8 × 8 × 8 products and
 * lavapipe's 8-lane subgroups (Mesa 26 from Debian 13's backports, fetched by setup.sh into
 * .tools/mesa-trixie) against the f32 tiles mm / mm_moe, every form (dense plain and GLU, routed
 * gate+up and down, full and partial tiles) for f32, q8_0 and iq2_xxs (the SCALED products) and
 * q2_k (the split ones). The engine's own 16 × 16 × 16 modules run on the H200 (docs/vulkan.md).
 */
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../ts/paths.js';

describe('mmc on lavapipe matrix units', () => {
  it('equals the f32 tiles within 1e-5 of the largest output, every form and type', () => {
    const r = spawnSync('bash', ['scripts/check/lavapipe-coopmat.sh', 'dist/scripts/check/mmc-check.js', '--fragment', '8', '--tokens', '5,63,100'], { cwd: ROOT, encoding: 'utf8', timeout: 1_500_000 });
    expect(r.status, `${r.stdout}\n${r.stderr}`).toBe(0);
    expect(r.stdout.match(/^ok /gm)?.length, r.stdout).toBe(48);
    expect(r.stdout).not.toMatch(/^FAIL/m);
  }, 1_600_000);
});
