/**
 * q36 --doctor's verdicts on stated machines (a BC-250 as its RADV reports it, the same board with
 * the kernel's default TTM limit, an old driver, lavapipe past its width, the H200), the int8-dot
 * choice behind its line, and the command on this machine.
 */
import { spawnSync } from 'node:child_process';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { TTM_BOOT_PARAMS, doctorChecks, doctorLines, type DoctorFacts } from '../ts/cli/doctor.js';
import { mvqChoice } from '../ts/engine/vulkan/features.js';
import type { VkDeviceInfo } from '../ts/vk/addon.js';

const GiB = 2 ** 30;
/** What a BC-250's RADV reports (perf-anchors.md: wave64, no matrix cores, `int dot: 0`; 16 GB unified). */
const BC250: VkDeviceInfo = {
  index: 0, name: 'AMD BC-250 (RADV GFX1013)', type: 'integrated', driver: 'radv Mesa 25.0.7', apiVersion: '1.4.305', vendorId: 0x1002,
  subgroupSize: 64, subgroupOps: true, maxStorageBufferRange: 2 ** 32 - 1, maxWorkGroupInvocations: 1024, unifiedMemory: true,
  externalMemoryHost: true, storage8bit: true, storage16bit: true, float16: true, int8: true, integerDot: true, integerDotAccelerated: false,
  coopmat: false, coopmatShapes: '', heaps: [{ size: 15.5 * GiB, deviceLocal: true }],
};
const board = (over: Partial<DoctorFacts> = {}, dev: Partial<VkDeviceInfo> = {}): DoctorFacts => ({
  platform: 'linux', device: { ...BC250, ...dev }, budgetBytes: 14.8 * GiB, deviceLocalBytes: 15.5 * GiB,
  subgroups: { reported: 64, lanes: 64 }, ttmPagesLimit: 3959290, ...over,
});
const byWhat = (f: DoctorFacts) => Object.fromEntries(doctorChecks(f).map((c) => [c.what.replace(/ \(unified\)/, ''), c]));

describe('q36 --doctor verdicts', () => {
  it('a BC-250 set up as the README says: every check ok, wave64, f32 matvecs, f32 tiles', () => {
    const c = byWhat(board({ modelBytes: 10.92 * GiB, modelPath: 'q2.gguf' }));
    expect(Object.values(c).filter((x) => x.verdict !== 'ok')).toEqual([]);
    expect(c['RADV driver'].detail).toMatch(/radv Mesa 25\.0\.7 \(Mesa 25\.0\.7\)/);
    expect(c.subgroups.detail).toMatch(/64 lanes, as the probe kernel runs them \(the BC-250's wave64\)/);
    expect(c['int8 dot products'].detail).toMatch(/emulated .*f32 matvecs/);
    expect(c['matrix cores'].detail).toMatch(/f32 tiles .*Q36_VK_F16=1 runs their products in packed f16/);
    expect(c['ttm.pages_limit'].detail).toMatch(/3959290 pages = 15\.10 GiB the GPU may map, the model needs 10\.92 GiB/);
    expect(doctorLines(doctorChecks(board())).at(-1)).toMatch(/^ready: 10 ok, 0 warning\(s\), 0 failure\(s\)$/);
  });

  it('the kernel\'s default TTM limit below the model: the load will fail, with the boot parameters', () => {
    const c = byWhat(board({ ttmPagesLimit: 1966080, modelBytes: 10.92 * GiB }));
    expect(c['ttm.pages_limit'].verdict).toBe('fail');
    expect(c['ttm.pages_limit'].detail).toContain('7.50 GiB the GPU may map, the model needs 10.92 GiB: loading the model will fail');
    expect(c['ttm.pages_limit'].detail).toContain(TTM_BOOT_PARAMS);
    // without a model: a warning that names the same parameters
    const w = byWhat(board({ ttmPagesLimit: 1966080 }))['ttm.pages_limit'];
    expect([w.verdict, w.detail.includes(TTM_BOOT_PARAMS)]).toEqual(['warn', true]);
    // the file missing on an amdgpu APU: cannot check, says what the board needs
    expect(byWhat(board({ ttmPagesLimit: undefined }))['ttm.pages_limit'].verdict).toBe('warn');
  });

  it('Vulkan below 1.3, no zero-copy import, AMDVLK, a model larger than the memory', () => {
    const c = byWhat(board({ modelBytes: 17 * GiB }, { apiVersion: '1.2.198', externalMemoryHost: false, driver: 'AMD open-source driver 2023.Q3 (AMDVLK)' }));
    expect(c['Vulkan 1.3'].verdict).toBe('fail');
    expect(c['VK_EXT_external_memory_host'].verdict).toBe('warn');
    expect(c['RADV driver']).toMatchObject({ verdict: 'warn', detail: expect.stringMatching(/AMDVLK is not tested/) });
    expect(c['device memory']).toMatchObject({ verdict: 'warn', detail: expect.stringMatching(/17\.00 GiB: it does not fit resident: run with --ssd-streaming/) });
  });

  it('subgroups that do not run as reported fail; no device at all fails with what to do', () => {
    const c = byWhat(board({ subgroups: { reported: 64, lanes: 16, problem: 'the device reports 64-lane subgroups but runs 16 invocations per subgroup operation' } }));
    expect(c.subgroups).toMatchObject({ verdict: 'fail', detail: expect.stringMatching(/runs 16 invocations .*would compute something else \(use --cpu\)/) });
    const none = doctorChecks({ platform: 'linux', vulkanError: 'no Vulkan device found' });
    expect(none.at(-1)).toMatchObject({ verdict: 'fail', what: 'Vulkan device', detail: expect.stringMatching(/mesa-vulkan-drivers.*--cpu/) });
  });

  it('the H200: accelerated int8 dot and matrix cores are taken; the TTM limit is only a note off amdgpu APUs', () => {
    const c = byWhat(board({ ttmPagesLimit: 1000 }, { name: 'NVIDIA H200', driver: 'NVIDIA 570.0', vendorId: 0x10de, unifiedMemory: false, subgroupSize: 32, integerDotAccelerated: true, coopmat: true }));
    expect(c['int8 dot products'].detail).toMatch(/accelerated: decode products over int8 levels \(mvq: all\)/);
    expect(c['matrix cores'].detail).toMatch(/prefill matmuls on the matrix units/);
    expect(c['ttm.pages_limit'].verdict).toBe('note');
  });
});

describe('the int8-dot choice (mvq)', () => {
  it('unasked: only where the packed dot is accelerated (not on the BC-250, whose RADV emulates it)', () => {
    expect(mvqChoice(BC250, undefined)).toBe('none');
    expect(mvqChoice({ integerDot: true, integerDotAccelerated: true }, undefined)).toBe('all');
    expect(mvqChoice({ integerDot: false, integerDotAccelerated: false }, undefined)).toBe('none');
  });
  it('asked (Q36_VK_MVQ): wherever the device has the feature, emulated or not', () => {
    expect([mvqChoice(BC250, true), mvqChoice(BC250, 'experts'), mvqChoice(BC250, false)]).toEqual(['all', 'experts', 'none']);
    expect(mvqChoice({ integerDot: false, integerDotAccelerated: false }, true)).toBe('none');
  });
});

describe('q36 --doctor on this machine', () => {
  it('prints a verdict for each requirement without a model, exits 0 unless one fails', () => {
    const r = spawnSync(process.execPath, [path.join(__dirname, '..', 'dist/ts/cli/q36.js'), '--doctor', '-m', '/nonexistent/model.gguf'], { encoding: 'utf8', timeout: 60_000 });
    for (const what of ['Vulkan 1.3', 'RADV driver', 'VK_EXT_external_memory_host', 'device memory', 'ttm.pages_limit', 'subgroups', 'int8 dot products', 'matrix cores']) {
      expect(r.stdout).toMatch(new RegExp(`^(ok|note|warn|fail) +${what.replace(/[.]/g, '\\.')}`, 'm'));
    }
    expect(r.stdout).toMatch(/^(ready|ready, with warnings|not ready): \d+ ok/m);
    expect(r.status).toBe(/^fail/m.test(r.stdout) ? 1 : 0);
  });
});
