/**
 * kernels.ts against the shaders themselves: every embedded SPIR-V module (each variant) has a
 * declaration whose push block size and workgroup size equal the module's, and which binds at
 * least the bindings the module uses (the optimizer drops unused ones, e.g. GRID in float
 * variants). The reflection is scripts/lib/spirv-reflect.mjs's, embedded by build-shaders.
 */
import { describe, expect, it } from 'vitest';
import { KERNELS, type KernelDecl } from '../ts/engine/vulkan/kernels.js';
import { loadAddon } from '../ts/vk/addon.js';

const decls = KERNELS as Record<string, KernelDecl>;
const shaders = loadAddon().shaders();

function declFor(name: string): KernelDecl | undefined {
  // the longest declared base name that the module name starts with (matvec_router1_f32 → matvec_router1)
  const base = Object.keys(decls).filter((k) => name === k || name.startsWith(`${k}_`)).sort((a, b) => b.length - a.length)[0];
  return base ? decls[base] : undefined;
}

describe('kernel declarations match the SPIR-V modules', () => {
  it('every module has a declaration, every declaration a module', () => {
    const orphans = shaders.filter((s) => !declFor(s.name) && s.name !== 'selftest_axpy').map((s) => s.name);
    expect(orphans).toEqual([]);
    for (const k of Object.keys(decls)) expect(shaders.some((s) => declFor(s.name) === decls[k]), k).toBe(true);
  });
  it.each(shaders.filter((s) => s.name !== 'selftest_axpy').map((s) => [s.name, s] as const))('%s', (_n, s) => {
    const d = declFor(s.name)!;
    expect(4 * d.push.length, `${s.name}: push bytes`).toBe(s.push);
    expect(d.local, `${s.name}: local_size_x`).toBe(s.local[0]);
    expect(d.bindings.length, `${s.name}: bindings`).toBeGreaterThanOrEqual(s.bindings);
  });
  it('a pipeline whose declaration disagrees with its module is refused by the addon', () => {
    const dev = new (loadAddon().Device)(-1);
    expect(() => dev.createPipeline('rmsnorm', 10, 28)).toThrow(/28 push-constant bytes declared, the shader's block has 32/);
    expect(() => dev.createPipeline('rmsnorm', 9, 32)).toThrow(/9 bindings declared, the shader uses 10/);
    dev.dispose();
  });
});
