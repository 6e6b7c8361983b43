import { describe, expect, it } from 'vitest';
import { loadAddon } from '../ts/vk/addon.js';
import { OpList, Pipelines } from '../ts/engine/vulkan/graph.js';
import { dispatch, type KernelDecl } from '../ts/engine/vulkan/kernels.js';
import { addShaders } from '../scripts/experiments/lib/shaders.js';
import { Core } from '../ts/core/wasm.js';

describe('build outputs', () => {
  it('the Vulkan addon loads, lists a device, and embeds only the engine\'s shaders', () => {
    const a = loadAddon();
    const devs = a.listDevices();
    expect(devs.length).toBeGreaterThan(0);
    expect(devs[0].subgroupSize).toBeGreaterThan(0);
    expect(devs[0].subgroupOps).toBe(true); // compute subgroup arithmetic + vote: the shaders need them
    // probes and test shaders are added at run time (scripts/experiments/lib/shaders.ts), not shipped
    for (const probe of ['grid_sync', 'grid_chain', 'selftest_axpy', 'axpy']) expect(a.shaderNames()).not.toContain(probe);
  });

  it('a shader added at run time (a test fixture: y = a·x + y) runs through the device\'s dispatch path and matches the CPU', async () => {
    await addShaders('test/shaders', ['axpy']);
    const AXPY: KernelDecl = { name: 'axpy', bindings: ['X', 'Y'], push: ['n', 'a:f32'], local: 64 };
    const dev = new (loadAddon().Device)(-1);
    try {
      const n = 4099, x = dev.createBuffer(4 * n, true), y = dev.createBuffer(4 * n, true);
      dev.write(x, 0, new Uint8Array(Float32Array.from({ length: n }, (_, i) => 0.5 * i).buffer));
      dev.write(y, 0, new Uint8Array(Float32Array.from({ length: n }, (_, i) => 1 - i).buffer));
      const ops = new OpList(new Pipelines(dev, [AXPY]));
      dispatch(ops, AXPY, { X: x, Y: y }, { n, a: 3 }, [Math.ceil(n / 64)]);
      const cmd = dev.record(ops.build());
      dev.runSync(cmd);
      const got = new Float32Array(dev.read(y, 0, 4 * n));
      for (let i = 0; i < n; i++) if (got[i] !== 3 * (0.5 * i) + (1 - i)) throw new Error(`axpy: element ${i} is ${got[i]}`);
      dev.freeCommand(cmd); dev.freeBuffer(x); dev.freeBuffer(y);
    } finally {
      dev.dispose();
    }
  });

  it('addShader refuses an embedded name, words that are not SPIR-V, and a name added already with other code', async () => {
    const a = loadAddon();
    await addShaders('test/shaders', ['axpy']); // the same module again: a no-op
    const local: [number, number, number] = [64, 1, 1];
    expect(() => a.addShader('argmax', Uint32Array.of(0x07230203, 0), 1, 0, local, [1])).toThrow(/'argmax' is an embedded shader/);
    expect(() => a.addShader('junk', Uint32Array.of(1, 2, 3), 1, 0, local, [1])).toThrow(/'junk' is not SPIR-V/);
    expect(() => a.addShader('axpy', Uint32Array.of(0x07230203, 7), 2, 8, local, [1, 1])).toThrow(/'axpy' was added already with other code/);
    expect(() => a.addShader('two', Uint32Array.of(0x07230203), 2, 0, local, [1])).toThrow(/1 binding counts for 2 bindings/);
  });

  it('addon errors become JS exceptions (a device that does not exist)', () => {
    expect(() => new (loadAddon().Device)(99)).toThrow(/Vulkan device 99 does not exist/);
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
