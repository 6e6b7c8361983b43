/**
 * The packed-f16 tiles (mmh.comp, mmh_moe.comp; opt-in with Q36_VK_F16=1 where the matrix units are
 * not in use: the BC-250's faster arithmetic): chosen by matvecOp only where asked, never for the
 * router, refused with the reason where they cannot run; their outputs against the f32 tiles within
 * f16's rounding (bench-mmc on lavapipe), and the engine's logits with them against the oracle's
 * within the error docs/vulkan.md records. Their speed is measured on the GPU machine (docs/vulkan.md).
 */
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { readEnv } from '../ts/cli/env.js';
import { openEngine } from '../ts/engine/index.js';
import { MM_ROWS, MV, OpList, matvecOp, type Pipelines } from '../ts/engine/vulkan/graph.js';
import { f16Tiles } from '../ts/engine/vulkan/limits.js';
import { loadAddon } from '../ts/vk/addon.js';
import { ROOT } from '../ts/paths.js';
import { fixture } from './helpers.js';

describe('choosing the packed-f16 tiles', () => {
  it('matvecOp runs mmh / mmh_moe where asked, with mm\'s buffers, push words and grid; the matrix units win', () => {
    const fake = { get: () => 0 } as unknown as Pipelines;
    const ops = (o: { f16?: boolean; coopmat?: boolean }) => {
      const l = new OpList(fake);
      const base = { type: 'q8_0', buffers: [1, 2, 3, 4, 5] as [number, number, number, number, number], rows: 256, n: 256, rowBytes: 272, ...o };
      matvecOp(l, { ...base, nRows: 100 });
      matvecOp(l, { ...base, nRows: 200, flags: MV.gather, K: 8, expertBytes: 256 * 272, moe: { tiles: 6, maxTiles: 9, ids: 7 } });
      matvecOp(l, { ...base, nRows: 100, flags: MV.glu, upBytes: 256 * 272 });
      matvecOp(l, { ...base, nRows: 1 });
      return l;
    };
    const f16 = ops({ f16: true }), f32 = ops({});
    expect(f16.names.slice(0, 3)).toEqual(['mmh_q8_0', 'mmh_moe_q8_0', 'mmh_q8_0']);
    expect(f32.names.slice(0, 3)).toEqual(['mm_q8_0', 'mm_moe_q8_0', 'mm_q8_0']);
    // one row is a matvec either way
    expect(f16.names[3]).toBe(f32.names[3]);
    // only the pipeline differs: the same words once the pipeline ids (both 0 here) are equal
    expect(Array.from(f16.build())).toEqual(Array.from(f32.build()));
    expect(ops({ f16: true, coopmat: true }).names[0]).toBe('mmc_q8_0');
    expect(256 / MM_ROWS).toBe(4);
  });
  it('f16Tiles takes them only where asked, without the matrix units, with f16 arithmetic and the modules, and says why not', () => {
    const on = { asked: true, coopmat: false, built: true };
    expect(f16Tiles({ float16: true }, on)).toEqual({ f16: true, why: '' });
    expect(f16Tiles({ float16: true }, { ...on, asked: false }).why).toMatch(/not asked/);
    expect(f16Tiles({ float16: true }, { ...on, coopmat: true }).why).toMatch(/matrix units take the products/);
    expect(f16Tiles({ float16: false }, on).why).toMatch(/no f16 arithmetic \(shaderFloat16\)/);
    expect(f16Tiles({ float16: true }, { ...on, built: false }).why).toMatch(/no packed-f16 kernels/);
  });
  it('Q36_VK_F16 is 0 or 1, anything else an error naming it', () => {
    expect([readEnv({ Q36_VK_F16: '0' }).vkF16, readEnv({ Q36_VK_F16: '1' }).vkF16, readEnv({}).vkF16]).toEqual([false, true, undefined]);
    expect(() => readEnv({ Q36_VK_F16: 'on' })).toThrow(/Q36_VK_F16 must be 0 \(exact f32 prefill tiles\) or 1/);
  });
});

describe('the packed-f16 tiles on lavapipe', () => {
  it('every form (dense, shared GLU, routed gate+up, routed down) within f16 rounding of the f32 tiles: under 3e-3 of the largest output, not exact', () => {
    const r = spawnSync('node', ['dist/scripts/bench/bench-mmc.js', '--small', '--tokens', '37,100', '--reps', '1', '--variant-of', 'mm', '--variant', 'mmh'], { cwd: ROOT, encoding: 'utf8', timeout: 600_000 });
    expect(r.status, `${r.stdout}\n${r.stderr}`).toBe(0);
    const rows = [...r.stdout.matchAll(/^(.+?)\s+mm(?:_moe)?_\S+ [\d.]+ ms\s+(mmh\S*) [\d.]+ ms .*max \|Δ\|\/\|y\| (\S+)$/gm)];
    expect(rows.length, r.stdout).toBe(8);
    for (const m of rows) {
      expect(m[2], m[0]).toMatch(/^mmh(_moe)?_(q8_0|iq2_xxs|q2_k)$/);
      // one f16 rounding of each operand is 2^-11 ≈ 4.9e-4 relative; partial sums of 16 products in f16 add a few of those
      expect(Number(m[3]), m[0]).toBeLessThan(3e-3);
      expect(Number(m[3]), m[0]).toBeGreaterThan(0);
    }
  }, 600_000);
  it('the engine runs them where asked and says so; its logits follow the f32 tiles\' (tinyA: cosine ≥ 0.8 at every position)', async () => {
    const d = loadAddon().listDevices().find((x) => x.type === 'cpu');
    if (!d) throw new Error('no lavapipe device: install mesa-vulkan-drivers');
    // the tiny random models amplify any rounding (one f16 an operand moves their logits, rms ~1,
    // by up to 5.58 on the H100: docs/vulkan.md), so this asks for the same logits in shape, not in value:
    // a wrong tile layout or an overflow leaves no likeness (cosine near 0) or NaN
    const prompt = Array.from({ length: 100 }, (_, i) => (i * 37 + 11) % 1000);
    const rows: Float32Array[][] = [];
    for (const vkF16 of [false, true]) {
      const e = await openEngine({ model: fixture('tinyA', 'tinyA-q2.gguf'), backend: 'vulkan', ctx: 256, vkDevice: d.index, vkF16 });
      try {
        if (vkF16) expect(e.describe()).toMatch(/prefill   matmuls on packed f16 tiles \(mmh: .*Q36_VK_F16=1\): the device has no usable matrix units/);
        const s = e.newSession(), out: Float32Array[] = [];
        await s.eval(prompt, { onLogits: (row) => out.push(Float32Array.from(row)) });
        s.dispose();
        rows.push(out);
      } finally {
        e.dispose();
      }
    }
    expect(rows[1].length).toBe(prompt.length);
    for (let p = 0; p < prompt.length; p++) {
      const [a, b] = [rows[0][p], rows[1][p]];
      let dot = 0, na = 0, nb = 0;
      for (let i = 0; i < a.length; i++) { dot += a[i] * b[i]; na += a[i] * a[i]; nb += b[i] * b[i]; }
      expect(dot / Math.sqrt(na * nb), `position ${p}`).toBeGreaterThanOrEqual(0.8);
    }
  }, 600_000);
});
