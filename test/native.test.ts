import { describe, expect, it } from 'vitest';
import { loadAddon } from '../ts/vk/addon.js';
import { Core } from '../ts/core/wasm.js';

describe('build outputs', () => {
  it('the Vulkan addon loads, lists a device, and runs an embedded shader', async () => {
    const a = loadAddon();
    const devs = a.listDevices();
    expect(devs.length).toBeGreaterThan(0);
    expect(devs[0].subgroupSize).toBeGreaterThan(0);
    expect(devs[0].subgroupOps).toBe(true); // compute subgroup arithmetic + vote: the shaders need them
    expect(a.shaderNames()).toContain('selftest_axpy');
    const r = await a.selfTest(-1, 4099);
    expect(r.n).toBe(4099);
    expect(r.maxError).toBe(0);
  });

  it('addon errors become JS exceptions (a device that does not exist)', async () => {
    await expect(loadAddon().selfTest(99, 16)).rejects.toThrow(/Vulkan device 99 does not exist/);
  });

  it('buffer views: a byte range bound like a buffer; misaligned or out-of-range views and freeing a viewed buffer are errors', () => {
    const dev = new (loadAddon().Device)(-1);
    try {
      const align = dev.info().minStorageBufferOffsetAlignment;
      const b = dev.createBuffer(4 * align, true);
      const v = dev.createView(b, align, align);
      if (align > 1) expect(() => dev.createView(b, 1, 4)).toThrow(/not a multiple of minStorageBufferOffsetAlignment/);
      expect(() => dev.createView(b, 0, 8 * align)).toThrow(/outside the buffer/);
      expect(() => dev.freeBuffer(b)).toThrow(/still has views/);
      dev.freeBuffer(v);
      dev.freeBuffer(b);
    } finally {
      dev.dispose();
    }
  });

  it('pipelineStats: the driver compiler statistics where it reports them, else an error naming the extension', () => {
    const dev = new (loadAddon().Device)(-1);
    try {
      // lavapipe lacks VK_KHR_pipeline_executable_properties; a GPU driver that has it returns pairs
      let st: [string, string][] | undefined;
      try { st = dev.pipelineStats('copy', 2, 4); } catch (e) { expect((e as Error).message).toMatch(/does not report pipeline statistics \(VK_KHR_pipeline_executable_properties\)/); }
      if (st) { expect(st.length).toBeGreaterThan(0); for (const [k, v] of st) { expect(typeof k).toBe('string'); expect(typeof v).toBe('string'); } }
      // a name too long for a string's inline buffer: the constructor's error path frees it once
      // (it was destroyed twice, a crash, where the driver reports no statistics)
      try { dev.pipelineStats('matvec_router1_f32', 8, 64); } catch (e) { expect((e as Error).message).toMatch(/does not report pipeline statistics/); }
      // a shader that is not embedded is an error either way
      expect(() => dev.pipelineStats('no_such_shader', 1, 0)).toThrow(/no_such_shader|does not report/);
    } finally {
      dev.dispose();
    }
  });

  it('the WASM core loads and allocates aligned memory', () => {
    const c = new Core();
    const p = c.alloc(100);
    const q = c.alloc(1 << 20);
    expect(p % 64).toBe(0);
    expect(q % 64).toBe(0);
    expect(q).toBeGreaterThanOrEqual(p + 100);
    c.u8(q, 1 << 20).fill(7);
    expect(c.u8(q, 4)[3]).toBe(7);
  });
});
