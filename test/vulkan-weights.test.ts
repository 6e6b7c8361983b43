/**
 * How weights reach the GPU (ts/engine/vulkan/weights.ts): zero-copy import of the mmap'd file
 * vs upload, and weights bound in windows when they exceed the largest binding. Every way must
 * give the same logits bit for bit (windows split rows or experts, never a dot product), and
 * those logits must match the oracle.
 */
import * as fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openEngine, type Engine, type EngineOptions } from '../ts/engine/index.js';
import type { VkEngine } from '../ts/engine/vulkan/vk-engine.js';
import { loadAddon } from '../ts/vk/addon.js';
import { fixture } from './helpers.js';

const device = loadAddon().listDevices().sort((a, b) => (a.type === 'cpu' ? 1 : 0) - (b.type === 'cpu' ? 1 : 0))[0];

interface Case { prompt_ids: number[]; greedy_ids: number[]; logits_offset_bytes: number; vocab: number }

/** Every position's logits of case 0, and max |Δ| against the oracle. */
async function run(e: Engine, c: Case, oracle: Float32Array): Promise<{ rows: Float32Array[]; err: number }> {
  const s = e.newSession();
  const rows: Float32Array[] = [];
  let err = 0;
  try {
    await s.eval([...c.prompt_ids, ...c.greedy_ids], {
      onLogits: (row, p) => {
        rows.push(row.slice());
        const off = c.logits_offset_bytes / 4 + p * c.vocab;
        for (let v = 0; v < c.vocab; v++) err = Math.max(err, Math.abs(row[v] - oracle[off + v]));
      },
    });
  } finally {
    s.dispose();
  }
  return { rows, err };
}

describe.each([
  ['tinyA', 'q2q4', 'reference-logits-q2q4.f32'],
  ['tinyR', 'q2', 'reference-logits-q2.f32'],
] as const)('Vulkan weights %s %s: import / upload, whole / windowed', (model, variant, refName) => {
  const path = fixture(model, `${model}-${variant}.gguf`);
  const ref = JSON.parse(fs.readFileSync(fixture(model, 'reference.json'), 'utf8')) as { cases: Case[] };
  const oracle = new Float32Array(fs.readFileSync(fixture(model, refName)).buffer.slice(0));
  const c = ref.cases[0];
  const base: EngineOptions = { model: path, backend: 'vulkan', ctx: 256, kvTypes: { k: 'f16', v: 'f16' } };
  const engines: Engine[] = [];
  let upload: { rows: Float32Array[]; err: number };
  const open = async (o: Partial<EngineOptions>) => {
    const e = await openEngine({ ...base, ...o });
    engines.push(e);
    return e as VkEngine;
  };
  beforeAll(async () => { upload = await run(await open({ vkWeights: 'upload' }), c, oracle); });
  afterAll(() => engines.forEach((e) => e.dispose()));

  it('upload, whole weights: matches the oracle', () => {
    expect(upload.err).toBeLessThan(1e-2);
  });

  // 48 KiB: every matrix and expert stack is cut into windows (one expert or a few rows each);
  // 200 KiB (import): gate and up of the routed experts still fuse, in windows of experts
  const configs: [string, Partial<EngineOptions>][] = [
    ['upload, 48 KiB bindings', { vkWeights: 'upload', vkMaxBinding: 48 << 10 }],
    ['import, whole weights', { vkWeights: 'import' }],
    ['import, 48 KiB bindings', { vkWeights: 'import', vkMaxBinding: 48 << 10 }],
    ['import, 200 KiB bindings', { vkWeights: 'import', vkMaxBinding: 200 << 10 }],
  ];
  it.each(configs)('%s: the same logits bit for bit', async (name, o) => {
    if (o.vkWeights === 'import' && !device.externalMemoryHost) {
      await expect(open(o)).rejects.toThrow(/does not support VK_EXT_external_memory_host/);
      return;
    }
    const e = await open(o);
    const out = await run(e, c, oracle);
    expect(out.rows.length).toBe(upload.rows.length);
    out.rows.forEach((r, i) => expect(r).toEqual(upload.rows[i]));
    const w = e.w.t;
    if (o.vkMaxBinding === 48 << 10) {
      // windows really were used: the output head by rows, the routed experts by experts
      expect(w.get('output.weight')!.windows.length).toBeGreaterThan(1);
      expect(w.get('blk.0.ffn_down_exps.weight')!.windows.length).toBeGreaterThan(1);
      for (const t of w.values()) for (const win of t.windows) expect(win.count).toBeGreaterThan(0);
    }
    if (o.vkWeights === 'import') {
      expect(e.describe()).toMatch(/MiB of the file bound in place \(zero-copy\)/);
      if (o.vkMaxBinding === 200 << 10) {
        const glu = w.get('blk.0.ffn_gate_up_exps.weight');
        expect(glu?.windows.length).toBeGreaterThan(1);
      }
    }
    console.log(`vulkan weights ${model} ${variant} ${name}: max |Δlogit| vs oracle ${out.err.toExponential(2)}`);
  });
});

describe('Vulkan weight mode selection', () => {
  it('auto imports on a unified-memory device with VK_EXT_external_memory_host, else uploads', async () => {
    const e = (await openEngine({ model: fixture('tinyA/tinyA-q2.gguf'), backend: 'vulkan', ctx: 64 })) as VkEngine;
    try {
      const i = e.info;
      const zeroCopy = /bound in place \(zero-copy\)/.test(e.describe());
      expect(zeroCopy).toBe(i.unifiedMemory && i.externalMemoryHost);
    } finally {
      e.dispose();
    }
  });

  it('refuses an unknown weight mode by name: the option, and Q36_VK_WEIGHTS at the CLI edge', async () => {
    await expect(openEngine({ model: fixture('tinyA/tinyA-q2.gguf'), backend: 'vulkan', ctx: 64, vkWeights: 'mmap' as 'auto' })).rejects.toThrow(/vkWeights must be auto, import or upload \(got "mmap"\)/);
    const { readEnv } = await import('../ts/cli/env.js');
    expect(() => readEnv({ Q36_VK_WEIGHTS: 'mmap' })).toThrow(/Q36_VK_WEIGHTS must be auto, import or upload, got "mmap"/);
    expect(() => readEnv({ Q36_VK_DEVICE: 'first' })).toThrow(/Q36_VK_DEVICE must be a device index/);
    expect(() => readEnv({ Q36_VK_MV_ROWS: '3' })).toThrow(/Q36_VK_MV_ROWS must be 1, 2 or 4/);
    expect(readEnv({ Q36_VK_WEIGHTS: 'upload', Q36_VK_DEVICE: '0', Q36_VK_MV_ROWS: '2' })).toMatchObject({ vkWeights: 'upload', vkDevice: 0, vkMatvecRows: 2 });
    expect(() => readEnv({ Q36_VK_MV: 'Q2_K;q8_0' })).toThrow(/Q36_VK_MV must be weight type names separated by commas/);
    expect(readEnv({ Q36_VK_MV: 'q2_k,iq2_xxs' }).vkMvTypes).toEqual(['q2_k', 'iq2_xxs']);
    expect(readEnv({ Q36_VK_MV: 'none' }).vkMvTypes).toEqual([]);
    expect(() => readEnv({ Q36_VK_MVQ: 'yes' })).toThrow(/Q36_VK_MVQ must be 0 \(f32 matvecs\), 1 .* or experts/);
    expect([readEnv({ Q36_VK_MVQ: '0' }).vkMvq, readEnv({ Q36_VK_MVQ: '1' }).vkMvq, readEnv({ Q36_VK_MVQ: 'experts' }).vkMvq, readEnv({}).vkMvq]).toEqual([false, true, 'experts', undefined]);
    await expect(openEngine({ model: fixture('tinyA/tinyA-q2.gguf'), backend: 'vulkan', ctx: 64, vkMvTypes: ['q2k'] })).rejects.toThrow(/vkMvTypes: "q2k" is not a weight type \(one of .*q2_k/);
    // the CLI stops with the variable's name
    const { spawnSync } = await import('node:child_process');
    const path = await import('node:path');
    const r = spawnSync(process.execPath, [path.resolve(__dirname, '../dist/ts/cli/q36.js'), '-m', fixture('tinyA/tinyA-q2.gguf'), '--vulkan', '-p', 'hi', '-n', '1'], { encoding: 'utf8', env: { ...process.env, Q36_VK_WEIGHTS: 'mmap' } });
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/Q36_VK_WEIGHTS must be auto, import or upload, got "mmap"/);
  });

  it('refuses a binding cap too small for one row, naming the weight', async () => {
    await expect(openEngine({ model: fixture('tinyA/tinyA-q2.gguf'), backend: 'vulkan', ctx: 64, vkWeights: 'upload', vkMaxBinding: 4096 })).rejects.toThrow(/does not fit the largest binding|exceeds the largest binding/);
  });
});
