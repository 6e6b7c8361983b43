/**
 * The matrix-core prefill matmuls (mmc.comp, mmc_moe.comp) and attention (attn_mmc.comp): built into the addon (setup.sh brings
 * a glslc that compiles GL_KHR_cooperative_matrix), chosen by matvecOp where asked and never for
 * the router, refused by the engine on a device without matrix units (lavapipe: the fallback mm
 * runs, and says why), switched off by Q36_VK_COOPMAT=0. Their arithmetic is checked on the H200
 * (scripts/check/vk-decoders.ts, mmc-check.ts, attn-mmc-check.ts, vk-parity.ts: docs/vulkan.md); the expected values of the
 * decoder check (f16Round, splitRound) are checked here against IEEE 754 facts.
 */
import { describe, expect, it } from 'vitest';
import { readEnv } from '../ts/cli/env.js';
import { openEngine } from '../ts/engine/index.js';
import { KERNELS } from '../ts/engine/vulkan/kernels.js';
import { prefillPath } from '../ts/engine/vulkan/limits.js';
import { MMC_MOE_PAIRS, MMC_ROWS, MM_MOE_PAIRS, MM_ROWS, MV, OpList, matvecOp, moePairs, type Pipelines } from '../ts/engine/vulkan/graph.js';
import { attnOnMatrixUnits } from '../ts/engine/vulkan/attn-decoded.js';
import { loadAddon } from '../ts/vk/addon.js';
import { f16Round, splitRound } from '../scripts/lib/decoder-check.js';
import { fixture } from './helpers.js';

const bits = (x: number) => new Uint32Array(Float32Array.of(x).buffer)[0];
const val = (b: number) => new Float32Array(Uint32Array.of(b).buffer)[0];

describe('f16Round and splitRound (the values mmc must give back)', () => {
  it('rounds to the nearest f16, ties to even, overflow to infinity, subnormals kept', () => {
    expect(val(f16Round(bits(1 / 3)))).toBe(0.333251953125);
    expect(val(f16Round(bits(1 + 2 ** -11)))).toBe(1); // a tie: to the even significand
    expect(val(f16Round(bits(1 + 3 * 2 ** -11)))).toBe(1 + 2 ** -9);
    expect(val(f16Round(bits(65504)))).toBe(65504);
    expect(val(f16Round(bits(65520)))).toBe(Infinity);
    expect(val(f16Round(bits(-70000)))).toBe(-Infinity);
    expect(val(f16Round(bits(2 ** -24)))).toBe(2 ** -24);
    expect(val(f16Round(bits(3 * 2 ** -26)))).toBe(2 ** -24); // 0.75 of the subnormal step
    expect(val(f16Round(bits(2048 + 1)))).toBe(2048); // spacing 2 above 2048: a tie, to even
    expect(val(f16Round(bits(-0.1)))).toBe(-0.0999755859375);
  });
  it('the two-f16 form keeps ~22 significant bits (within 2^-22 of the value; 2^-25 absolute below f16\'s normal range)', () => {
    for (const x of [0.1, -1 / 3, Math.PI, 1e-3, 12345.678, 6.2e-5, -2.5e-5, 3e-7]) {
      const y = val(splitRound(bits(x))), xf = Math.fround(x);
      expect(Math.abs(y - xf), String(x)).toBeLessThanOrEqual(Math.max(Math.abs(xf) * 2 ** -22, 2 ** -25));
    }
    expect(val(splitRound(bits(-2.5e-5)))).not.toBe(Math.fround(-2.5e-5)); // hi's subnormal f16 rounds
    expect(val(splitRound(bits(1 + 2 ** -20)))).toBe(1 + 2 ** -20);
    expect(val(splitRound(bits(0.5)))).toBe(0.5);
  });
});

describe('the matrix-core kernels in the build and in the op choice', () => {
  it('the addon embeds mmc, mmc_glu, mmc_moe and mmc_moe_glu for every type mm and mm_moe have, with mm\'s interfaces', () => {
    const names = loadAddon().shaderNames();
    const mm = names.filter((n) => /^mm_(?!moe)/.test(n)), moe = names.filter((n) => n.startsWith('mm_moe_'));
    expect(mm.length).toBeGreaterThan(20);
    for (const n of mm) expect(names, n).toEqual(expect.arrayContaining([n.replace(/^mm_/, 'mmc_'), n.replace(/^mm_/, 'mmc_glu_')]));
    for (const n of moe) expect(names, n).toEqual(expect.arrayContaining([n.replace(/^mm_moe_/, 'mmc_moe_'), n.replace(/^mm_moe_/, 'mmc_moe_glu_')]));
    for (const k of [KERNELS.mmc, KERNELS.mmc_glu]) expect(k.bindings).toEqual(KERNELS.mm.bindings);
    for (const k of [KERNELS.mmc_moe, KERNELS.mmc_moe_glu]) expect(k.bindings).toEqual(KERNELS.mm_moe.bindings);
  });
  it('the addon embeds attn_mmc for every K type it takes and the decode pass for every cache-type pair beside them; prefill attention runs there only for those K types, on the matrix units', () => {
    const names = loadAddon().shaderNames();
    expect(names.filter((n) => n.startsWith('attn_tile_')).length).toBe(16);
    for (const k of ['f16', 'q8_0', 'q4_0'] as const) {
      expect(names).toContain(`attn_mmc_${k}`);
      for (const v of ['f32', 'f16', 'q8_0', 'q4_0']) expect(names).toContain(`attn_decode_${k}_${v}`);
    }
    // an f32 K is not exact in f16: no module for it
    expect(names.filter((n) => n.startsWith('attn_mmc_')).sort()).toEqual(['attn_mmc_f16', 'attn_mmc_q4_0', 'attn_mmc_q8_0']);
    expect(names.filter((n) => n.startsWith('attn_decode_f32'))).toEqual([]);
    expect(KERNELS.attn_mmc.push.length).toBe(KERNELS.attn_tile.push.length);
    expect((['f32', 'f16', 'q8_0', 'q4_0'] as const).map((k) => attnOnMatrixUnits(true, k))).toEqual([false, true, true, true]);
    expect(attnOnMatrixUnits(false, 'q8_0')).toBe(false);
  });
  it('matvecOp runs mmc / mmc_moe (a GLU: mmc_glu / mmc_moe_glu) where asked, mm / mm_moe otherwise, with the same grid', () => {
    const fake = { get: () => 0 } as unknown as Pipelines;
    const ops = (coopmat: boolean) => {
      const o = new OpList(fake);
      const base = { type: 'q8_0', buffers: [1, 2, 3, 4, 5] as [number, number, number, number, number], rows: 256, n: 256, rowBytes: 272, coopmat };
      matvecOp(o, { ...base, nRows: 100 });
      matvecOp(o, { ...base, nRows: 200, flags: MV.gather, K: 8, expertBytes: 256 * 272, moe: { tiles: 6, maxTiles: 9, ids: 7 } });
      matvecOp(o, { ...base, nRows: 100, flags: 4, upBytes: 256 * 272 });
      matvecOp(o, { ...base, nRows: 200, flags: 5, K: 8, expertBytes: 512 * 272, upBytes: 256 * 272, moe: { tiles: 6, maxTiles: 9, ids: 7 } });
      matvecOp(o, { ...base, nRows: 1 });
      return o;
    };
    const on = ops(true), off = ops(false);
    expect(on.names).toEqual(['mmc_q8_0', 'mmc_moe_q8_0', 'mmc_glu_q8_0', 'mmc_moe_glu_q8_0', off.names[4]]);
    expect(off.names.slice(0, 4)).toEqual(['mm_q8_0', 'mm_moe_q8_0', 'mm_q8_0', 'mm_moe_q8_0']);
    // same buffers, push words and workgroups: only the pipeline differs, and the dense mmc's
    // 128-row tiles need half mm's workgroups along x (the first op: pipeline, buffer count and
    // buffers, push count and words, then the grid)
    const want = Array.from(off.build()), gx = 2 + want[1] + 1 + want[2 + want[1]];
    expect(want[gx]).toBe(256 / MM_ROWS);
    want[gx] = 256 / MMC_ROWS;
    expect(Array.from(on.build())).toEqual(want);
    expect([moePairs(true), moePairs(false)]).toEqual([MMC_MOE_PAIRS, MM_MOE_PAIRS]);
  });
  it('prefillPath takes the matrix units only with the shape, 48 KiB of shared memory, the modules and no opt-out, and says why not', () => {
    const dev = { coopmat: true, coopmatShapes: '16x16x16 f16,f16->f32', maxComputeSharedMemorySize: 49152 };
    expect(prefillPath(dev, { built: true, optOut: false })).toEqual({ coopmat: true, why: '' });
    expect(prefillPath({ ...dev, coopmat: false, coopmatShapes: '' }, { built: true, optOut: false }).why).toMatch(/no usable matrix units/);
    expect(prefillPath({ ...dev, coopmat: false, coopmatShapes: '8x8x8 f16,f16->f32' }, { built: true, optOut: false }).why).toMatch(/lack 16x16x16 .*8x8x8/);
    const small = prefillPath({ ...dev, maxComputeSharedMemorySize: 32768 }, { built: true, optOut: false });
    expect(small.coopmat).toBe(false);
    expect(small.why).toMatch(/32768 bytes of compute shared memory are under the matrix-unit kernels' 49152/);
    expect(prefillPath(dev, { built: false, optOut: false }).why).toMatch(/no matrix-core kernels/);
    expect(prefillPath(dev, { built: true, optOut: true }).why).toBe('Q36_VK_COOPMAT=0');
  });
  it('Q36_VK_COOPMAT is 0 or 1, anything else an error naming it', () => {
    expect([readEnv({ Q36_VK_COOPMAT: '0' }).vkCoopmat, readEnv({ Q36_VK_COOPMAT: '1' }).vkCoopmat, readEnv({}).vkCoopmat]).toEqual([false, true, undefined]);
    expect(() => readEnv({ Q36_VK_COOPMAT: 'yes' })).toThrow(/Q36_VK_COOPMAT must be 0 \(f32 prefill tiles\) or 1/);
  });
});

describe('a device without matrix units (lavapipe)', () => {
  it('reports none, and the engine runs the f32 tiles and says why', async () => {
    const d = loadAddon().listDevices().find((x) => x.type === 'cpu');
    if (!d) throw new Error('no lavapipe device: install mesa-vulkan-drivers');
    expect(d.coopmat).toBe(false);
    const e = await openEngine({ model: fixture('tinyA', 'tinyA-q2.gguf'), backend: 'vulkan', ctx: 256, vkDevice: d.index });
    try {
      expect(e.describe()).toMatch(/prefill   matmuls on f32 tiles \(mm\): the device has no usable matrix units/);
    } finally {
      e.dispose();
    }
  });
});
