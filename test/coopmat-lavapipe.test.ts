/**
 * The matrix-unit kernels' logic without a GPU: mmc.glsl and attn_mmc.comp built with 8 × 8 × 8
 * products and lavapipe's 8-lane subgroups (Mesa 26 from Debian 13's backports, fetched by
 * setup.sh into .tools/mesa-trixie) against the f32 kernels they stand in for: mm / mm_moe in
 * every form (dense plain and GLU, routed gate+up and down, full and partial tiles) for f32, q8_0
 * and iq2_xxs and q2_k (the SCALED products), and attn_tile (one and several key tiles and blocks,
 * two head shapes; K held as scaled integers and as f16, over the operands the decode pass wrote;
 * 512 and 256 threads; attn_mma), and the decode pass against the host's buffers. The engine's own
 * 16 × 16 × 16 modules run on the H200
 * (docs/vulkan.md).
 */
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../ts/paths.js';

const underLavapipe = (...args: string[]) => spawnSync('bash', ['scripts/check/lavapipe-coopmat.sh', ...args], { cwd: ROOT, encoding: 'utf8', timeout: 1_500_000 });

describe('matrix-unit kernels on lavapipe matrix units', () => {
  // the engine's forms (the GLU modules apply the span scales by element index), and every form so
  // (IDX_SCALES on the plain modules: scripts/experiments/tiles/build-idx.sh)
  for (const define of [undefined, 'IDX_SCALES']) {
    it(`mmc${define ? ` (${define})` : ''} equals the f32 tiles within 1e-5 of the largest output, every form and type`, () => {
      const r = underLavapipe('dist/scripts/check/mmc-check.js', '--fragment', '8', '--tokens', '5,63,100', ...(define ? ['--define', define] : []));
      expect(r.status, `${r.stdout}\n${r.stderr}`).toBe(0);
      expect(r.stdout.match(/^ok /gm)?.length, r.stdout).toBe(72);
      expect(r.stdout).not.toMatch(/^FAIL/m);
    }, 1_600_000);
  }

  // the engine's form (the decode pass, then attn_mmc) at 512 threads a workgroup for the cache kinds
  // it takes (K scaled integers or f16), past one 1024-key block for q8_0/q4_0, and at 256 threads;
  // attn_mma's element-indexed scales with 64-dim S steps (scripts/experiments/attn, attn_tile's
  // interface) for q8_0/q4_0
  const mma = ['--source', 'scripts/experiments/attn/attn_mma.comp', '--define', 'IDX_SCALES,DS64'];
  const cases = [
    { kv: 'q8_0/q4_0', pos: '0,130,700,1100', threads: '512', more: [] as string[] }, { kv: 'f16/f16', pos: '0,130,700', threads: '512', more: [] },
    { kv: 'q4_0/q8_0', pos: '0,700', threads: '512', more: [] }, { kv: 'q8_0/q4_0', pos: '0,700,1100', threads: '256', more: [] },
    { kv: 'q8_0/q4_0', pos: '0,700,1100', threads: '512', more: mma },
  ];
  for (const { kv, pos, threads, more } of cases) {
    it(`attn_mmc${more.length ? ' (attn_mma, IDX_SCALES and DS64)' : ''} (${threads} threads) equals attn_tile within 1e-5 of the largest output (${kv} cache, depths ${pos}: up to 16 key tiles a block)`, () => {
      const r = underLavapipe('dist/scripts/check/attn-mmc-check.js', '--fragment', '8', '--threads', threads, '--kv', kv, '--pos', pos, '--tokens', '33,100', '--reps', '1', ...more);
      expect(r.status, `${r.stdout}\n${r.stderr}`).toBe(0);
      // 2 head shapes × 2 token counts × the depths, each with no NaN
      const rows = r.stdout.split('\n').filter((l) => /^\d+\/\d+,/.test(l));
      expect(rows.length, r.stdout).toBe(4 * pos.split(',').length);
      for (const l of rows) expect(Number(l.split(',')[6]), l).toBe(0);
      expect(r.stdout).toMatch(/^ok: every output within/m);
    }, 1_600_000);
  }

  // the decode pass (attn_decode, no matrix units) writes what the host builds from the same cache
  // rows and Q (scripts/lib/attn-decoded.ts), bit for bit
  it('attn_decode writes the host\'s Q, K and V buffers bit for bit (q8_0/q4_0, a partial token tile, past a 1024-key block)', () => {
    const r = underLavapipe('dist/scripts/bench/bench-attn-tile.js', '--kernels', 'attn_tile', '--pos', '0,1100', '--tokens', '33', '--blk', '1024', '--reps', '1', '--decode');
    expect(r.status, `${r.stdout}\n${r.stderr}`).toBe(0);
    const decoded = [...r.stdout.matchAll(/^# decode pass ([QKV]): (\d+) of (\d+) words differ/gm)];
    expect(decoded.map((m) => m[1]), r.stdout).toEqual(['Q', 'K', 'V']);
    for (const m of decoded) { expect(Number(m[2]), m[0]).toBe(0); expect(Number(m[3]), m[0]).toBeGreaterThan(0); }
  }, 1_600_000);
});
