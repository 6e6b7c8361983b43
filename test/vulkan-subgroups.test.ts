/**
 * The device's subgroups as they run (ts/engine/vulkan/subgroup-probe.ts): the probe's checks on
 * stated layouts (a consistent 64-lane device, the BC-250's; lavapipe's false 64; lanes out of
 * order), the probe on this device, and the engine refusing a device whose subgroups are not what
 * it reports. This file also runs in the subgroup-16 project (vitest.config.ts), where the test
 * below checks that lavapipe really runs 16 lanes there.
 */
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { Pipelines } from '../ts/engine/vulkan/graph.js';
import { checkSubgroupWords, probeSubgroups } from '../ts/engine/vulkan/subgroup-probe.js';
import { loadAddon } from '../ts/vk/addon.js';
import { fixture } from './helpers.js';

/** The words a device with `lanes`-wide subgroups that reports `reported` writes (consecutive lanes). */
function words(reported: number, lanes: number, mutate?: (w: Uint32Array) => void): Uint32Array {
  const w = new Uint32Array(256 * 4);
  for (let i = 0; i < 256; i++) {
    w.set([lanes, (i % lanes) | (reported << 16), Math.floor(i / lanes) | ((256 / lanes) << 16), i ^ 1], 4 * i);
  }
  mutate?.(w);
  return w;
}

describe('the subgroup probe\'s checks', () => {
  it('a device that runs what it reports passes, at every size the engine takes (8 to 64)', () => {
    for (const s of [8, 16, 32, 64]) expect(checkSubgroupWords(words(s, s), s)).toEqual({ reported: s, lanes: s });
  });
  it('lavapipe above 512 bits: 64 reported, 16 run', () => {
    expect(checkSubgroupWords(words(64, 16), 64).problem).toBe('the device reports 64-lane subgroups but runs 16 invocations per subgroup operation');
  });
  it('shaders seeing another size than the device reports', () => {
    expect(checkSubgroupWords(words(32, 32), 64).problem).toMatch(/shaders see subgroup size 32, the device reports 64/);
  });
  it('lanes that are not consecutive invocations, a wrong subgroup id, a wrong shuffle', () => {
    expect(checkSubgroupWords(words(64, 64, (w) => { w[4 * 5 + 1] = 6 | (64 << 16); }), 64).problem).toMatch(/invocation 5 is lane 6 of a 64-lane subgroup/);
    expect(checkSubgroupWords(words(64, 64, (w) => { w[4 * 70 + 2] = 0 | (4 << 16); }), 64).problem).toMatch(/invocation 70 is in subgroup 0 of 4/);
    expect(checkSubgroupWords(words(64, 64, (w) => { w[4 * 9 + 3] = 9; }), 64).problem).toMatch(/invocation 9: a shuffle-xor by 1 read invocation 9/);
  });
});

describe('this device', () => {
  it('runs the subgroups it reports (in the subgroup-16 project: lavapipe at 16 lanes)', () => {
    const dev = new (loadAddon().Device)(-1);
    try {
      const info = dev.info(), r = probeSubgroups(dev, new Pipelines(dev));
      expect(r.problem).toBeUndefined();
      expect(r.lanes).toBe(info.subgroupSize);
      const width = Number(process.env.LP_NATIVE_VECTOR_WIDTH ?? 256);
      if (/llvmpipe/i.test(info.name)) expect(info.subgroupSize).toBe(width / 32);
    } finally {
      dev.dispose();
    }
  });

  it('the engine refuses lavapipe at 64 reported lanes (it runs 16), naming the problem', () => {
    const info = loadAddon().listDevices()[0];
    if (!/llvmpipe/i.test(info.name)) return; // only lavapipe misreports (a GPU is checked by the test above)
    const r = spawnSync(process.execPath, ['dist/ts/cli/q36.js', '--vulkan', '-m', fixture('tinyA/tinyA-q8_0.gguf'), '-p', 'hi', '-n', '1'], {
      encoding: 'utf8', env: { ...process.env, LP_NATIVE_VECTOR_WIDTH: '2048' }, timeout: 60_000,
    });
    expect(r.status).not.toBe(0);
    expect(r.stderr).toMatch(/subgroups do not run as it reports them \(the device reports 64-lane subgroups but runs 16 invocations per subgroup operation\).*LP_NATIVE_VECTOR_WIDTH above 512 is not supported/);
  });
});
