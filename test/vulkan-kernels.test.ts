/**
 * kernels.ts against the shaders themselves: every embedded SPIR-V module (each variant) has a
 * declaration whose push block size and workgroup size equal the module's, and which binds at
 * least the bindings the module uses (the optimizer drops unused ones, e.g. GRID in float
 * variants), each with the module's number of buffers (the batched step's _rows kernels bind
 * arrays, one buffer per row). The reflection is scripts/lib/spirv-reflect.mjs's, embedded by
 * build-shaders.
 */
import { describe, expect, it } from 'vitest';
import { KERNELS, ROW_ARRAY, ROW_KERNELS, bindingCounts, bindingList, type KernelDecl } from '../ts/engine/vulkan/kernels.js';
import { loadAddon } from '../ts/vk/addon.js';

const decls: Record<string, KernelDecl> = { ...KERNELS, ...Object.fromEntries(Object.values(ROW_KERNELS).map((d) => [d.name, d])) };
const shaders = loadAddon().shaders();

function declFor(name: string): KernelDecl | undefined {
  // the longest declared base name that the module name starts with (matvec_router1_f32 → matvec_router1)
  const base = Object.keys(decls).filter((k) => name === k || name.startsWith(`${k}_`)).sort((a, b) => b.length - a.length)[0];
  return base ? decls[base] : undefined;
}

describe('kernel declarations match the SPIR-V modules', () => {
  it('every module has a declaration, every declaration a module', () => {
    const orphans = shaders.filter((s) => !declFor(s.name)).map((s) => s.name);
    expect(orphans).toEqual([]);
    for (const k of Object.keys(decls)) expect(shaders.some((s) => declFor(s.name) === decls[k]), k).toBe(true);
  });
  it.each(shaders.map((s) => [s.name, s] as const))('%s', (_n, s) => {
    const d = declFor(s.name)!;
    expect(4 * d.push.length, `${s.name}: push bytes`).toBe(s.push);
    expect(d.local, `${s.name}: local_size_x`).toBe(s.local[0]);
    expect(d.bindings.length, `${s.name}: bindings`).toBeGreaterThanOrEqual(s.bindings);
    const want = bindingCounts(d).slice(0, s.bindings);
    expect(s.counts.map((c, i) => (c === 0 ? want[i] : c)), `${s.name}: buffers of each binding`).toEqual(want);
  });
  it('the _rows kernels index arrays of ROW_ARRAY buffers; the plain kernels have none', () => {
    const rows = shaders.filter((s) => /_rows(_|$)/.test(s.name));
    expect(rows.length).toBeGreaterThanOrEqual(6);
    for (const s of rows) expect(Math.max(...s.counts), s.name).toBe(ROW_ARRAY);
    for (const s of shaders.filter((x) => !/_rows(_|$)/.test(x.name))) expect(Math.max(0, ...s.counts), s.name).toBeLessThanOrEqual(1);
  });
  it('a per-row binding takes 1..ROW_ARRAY buffers, the missing rows repeating row 0; any other one buffer', () => {
    const d = ROW_KERNELS.deltanet, b = { U: 1, B: 2, AL: 3, dtBias: 4, A: 5, O: 7, Z: 8, normWeight: 9, CK: 10 };
    expect(bindingList(d, { ...b, state: [60, 61, 62] })).toEqual([1, 2, 3, 4, 5, 60, 61, 62, 60, 60, 60, 60, 60, 7, 8, 9, 10]);
    expect(() => bindingList(d, { ...b, state: 6 })).toThrow(/state takes one buffer per row/);
    expect(() => bindingList(d, { ...b, state: Array.from({ length: ROW_ARRAY + 1 }, (_, i) => i) })).toThrow(/takes 1\.\.8 rows/);
    expect(() => bindingList(KERNELS.deltanet, { ...b, state: [6] })).toThrow(/state takes one buffer$/);
  });
  it('a pipeline whose declaration disagrees with its module is refused by the addon', () => {
    const dev = new (loadAddon().Device)(-1);
    expect(() => dev.createPipeline('rmsnorm', 10, 28)).toThrow(/28 push-constant bytes declared, the shader's block has 32/);
    expect(() => dev.createPipeline('rmsnorm', 9, 32)).toThrow(/9 bindings declared, the shader uses 10/);
    // an array binding declared with another length than the module's
    const counts = bindingCounts(ROW_KERNELS.deltanet);
    expect(() => dev.createPipeline('deltanet_rows', 10, 32)).toThrow(/binding 5 declared with 1 buffers, the shader's has 8/);
    expect(() => dev.createPipeline('deltanet', 10, 32, counts)).toThrow(/binding 5 declared with 8 buffers, the shader's has 1/);
    expect(dev.createPipeline('deltanet_rows', 10, 32, counts)).toBeGreaterThan(0);
    dev.dispose();
  });
});
