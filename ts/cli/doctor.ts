/**
 * q36 --doctor: the QuarkStar README's requirements, each with a verdict, without a model. The facts
 * are gathered once (gatherFacts: the addon, the device, its subgroup probe, the kernel's TTM limit)
 * and judged by a pure function (doctorChecks), so the verdicts are tested with the values a
 * BC-250 reports.
 */
import * as fs from 'node:fs';
import { mvqChoice } from '../engine/vulkan/features.js';
import type { SubgroupRun } from '../engine/vulkan/subgroup-probe.js';
import type { VkDeviceInfo } from '../vk/addon.js';
import { formatSize } from './size.js';

/** The boot parameters the QuarkStar README asks for on the BC-250 (≈ 15.1 GiB of 4 KiB pages). */
export const TTM_BOOT_PARAMS = 'ttm.pages_limit=3959290 ttm.page_pool_size=3959290';
const TTM_PAGES_LIMIT = '/sys/module/ttm/parameters/pages_limit';

export interface DoctorFacts {
  platform: string;
  /** why the Vulkan addon or device could not be opened */
  vulkanError?: string;
  device?: VkDeviceInfo;
  /** the opened device's VK_EXT_memory_budget budget (0: the driver has no budget) and device-local bytes */
  budgetBytes?: number;
  deviceLocalBytes?: number;
  subgroups?: SubgroupRun;
  /** /sys/module/ttm/parameters/pages_limit (4 KiB pages); undefined where the file is absent */
  ttmPagesLimit?: number;
  /** the model file's size, when one was named and exists */
  modelBytes?: number;
  modelPath?: string;
}

export type Verdict = 'ok' | 'note' | 'warn' | 'fail';
export interface Check { verdict: Verdict; what: string; detail: string }


function apiAtLeast(v: string, major: number, minor: number): boolean {
  const m = /^(\d+)\.(\d+)/.exec(v);
  return m !== null && (Number(m[1]) > major || (Number(m[1]) === major && Number(m[2]) >= minor));
}

/** The checks, in the README's order. */
export function doctorChecks(f: DoctorFacts): Check[] {
  const out: Check[] = [];
  const add = (verdict: Verdict, what: string, detail: string) => out.push({ verdict, what, detail });
  add(f.platform === 'linux' ? 'ok' : 'warn', 'operating system', f.platform === 'linux' ? 'Linux' : `${f.platform}: QuarkStar's Vulkan path targets Linux with Mesa (RADV)`);
  const d = f.device;
  if (!d) {
    add('fail', 'Vulkan device', `${f.vulkanError ?? 'no Vulkan device found'}: install Mesa's Vulkan drivers (mesa-vulkan-drivers) or run with --cpu`);
    return out;
  }
  add('ok', 'Vulkan device', `${d.name} (${d.type}), device ${d.index}`);
  add(apiAtLeast(d.apiVersion, 1, 3) ? 'ok' : 'fail', 'Vulkan 1.3', `the driver offers Vulkan ${d.apiVersion}${apiAtLeast(d.apiVersion, 1, 3) ? '' : ': update Mesa (the engine needs 1.3)'}`);
  const radv = /\bradv\b/i.test(d.driver), mesa = /Mesa (\d+(?:\.\d+)*)/.exec(d.driver)?.[1];
  add(radv ? 'ok' : 'warn', 'RADV driver', radv ? `${d.driver}${mesa ? ` (Mesa ${mesa})` : ''}`
    : `${d.driver || 'unknown driver'}: the BC-250 build is made for Mesa's RADV${/amdvlk|amd proprietary/i.test(d.driver) ? ' (AMDVLK is not tested)' : ''}; other drivers run, checked only on lavapipe and NVIDIA`);
  add(d.externalMemoryHost ? 'ok' : d.unifiedMemory ? 'warn' : 'note', 'VK_EXT_external_memory_host', d.externalMemoryHost ? 'zero-copy weights: the GGUF is mapped as a Vulkan buffer'
    : d.unifiedMemory ? 'missing: the weights are copied into device memory, which on unified memory holds them twice while loading' : 'missing (a discrete GPU uploads its weights anyway)');
  // memory: what the device can give, and the model's size against it
  const local = f.deviceLocalBytes ?? d.heaps.filter((h) => h.deviceLocal).reduce((a, h) => a + h.size, 0);
  const budget = f.budgetBytes && f.budgetBytes > 0 ? Math.min(f.budgetBytes, local) : undefined;
  const avail = budget ?? local;
  const memWhat = `device memory${d.unifiedMemory ? ' (unified)' : ''}`;
  const memText = `${formatSize(local)} device-local${budget !== undefined ? `, ${formatSize(budget)} free now (VK_EXT_memory_budget)` : ''}`;
  if (f.modelBytes !== undefined) {
    const fits = f.modelBytes <= avail * 0.95;
    add(fits ? 'ok' : 'warn', memWhat, `${memText}; ${f.modelPath ?? 'the model'} is ${formatSize(f.modelBytes)}${fits ? '' : ': it does not fit resident: run with --ssd-streaming (routed experts from the file) or a smaller quantization'}`);
  } else add('ok', memWhat, memText);
  // the amdgpu TTM limit: GPU-reachable system memory on an APU; the Mesa loader cannot see past it
  const amd = radv || d.vendorId === 0x1002;
  if (f.ttmPagesLimit === undefined) {
    add(amd && d.unifiedMemory ? 'warn' : 'note', 'ttm.pages_limit', `${TTM_PAGES_LIMIT} not found${amd && d.unifiedMemory ? `: cannot check the GPU's share of memory (the BC-250 needs ${TTM_BOOT_PARAMS})` : ' (not an amdgpu system)'}`);
  } else if (!(amd && d.unifiedMemory)) {
    add('note', 'ttm.pages_limit', `${f.ttmPagesLimit} pages = ${formatSize(f.ttmPagesLimit * 4096)} (it bounds the GPU's memory on amdgpu APUs only)`);
  } else {
    const limit = f.ttmPagesLimit * 4096;
    const need = f.modelBytes;
    const short = need !== undefined ? limit < need : limit < 3959290 * 4096 * 0.99;
    const detail = `${f.ttmPagesLimit} pages = ${formatSize(limit)} the GPU may map${need !== undefined ? `, the model needs ${formatSize(need)}` : ''}`;
    add(short ? (need !== undefined ? 'fail' : 'warn') : 'ok', 'ttm.pages_limit', short
      ? `${detail}: ${need !== undefined ? 'loading the model will fail' : 'the q2 model will not load'}; add ${TTM_BOOT_PARAMS} to the kernel command line (bootloader), then reboot`
      : detail);
  }
  // subgroups: what the device reports against what its shaders run
  const sg = f.subgroups;
  if (sg?.problem) add('fail', 'subgroups', `${sg.problem}: the Vulkan kernels would compute something else (use --cpu)`);
  else add(d.subgroupSize >= 8 ? 'ok' : 'fail', 'subgroups', `${d.subgroupSize} lanes${sg ? ', as the probe kernel runs them' : ''}${d.subgroupSize < 8 ? ': the kernels need at least 8' : d.subgroupSize === 64 ? ' (the BC-250\'s wave64)' : ''}`);
  const mvq = mvqChoice(d, undefined);
  add('ok', 'int8 dot products', d.integerDotAccelerated ? `packed 4×8-bit dot accelerated: decode products over int8 levels (mvq: ${mvq})`
    : d.integerDot ? 'packed 4×8-bit dot emulated by the driver (as on the BC-250): decode keeps the f32 matvecs' : 'none: decode uses the f32 matvecs');
  add('ok', 'matrix cores', d.coopmat ? 'VK_KHR_cooperative_matrix 16×16×16 f16→f32: prefill matmuls on the matrix units'
    : `none usable${d.coopmatShapes ? ` (${d.coopmatShapes})` : ''}: prefill on f32 tiles (the BC-250 has none)${d.float16 ? '; with f16 arithmetic, Q36_VK_F16=1 runs their products in packed f16 (faster, less exact: docs/vulkan.md)' : ''}`);
  return out;
}

/** The facts of this machine: the addon, device `index` (or the engine's default), its probe, the TTM limit, the model's size. */
export async function gatherFacts(o: { index?: number; modelPath?: string }): Promise<DoctorFacts> {
  const f: DoctorFacts = { platform: process.platform };
  try {
    const t = fs.readFileSync(TTM_PAGES_LIMIT, 'utf8').trim();
    if (/^\d+$/.test(t)) f.ttmPagesLimit = Number(t);
  } catch { /* not an amdgpu/ttm kernel */ }
  if (o.modelPath !== undefined) {
    try {
      const st = fs.statSync(o.modelPath);
      if (st.isFile()) { f.modelBytes = st.size; f.modelPath = o.modelPath; }
    } catch { /* no model here: the checks leave it out */ }
  }
  try {
    const { loadAddon } = await import('../vk/addon.js');
    const { Pipelines } = await import('../engine/vulkan/graph.js');
    const { probeSubgroups } = await import('../engine/vulkan/subgroup-probe.js');
    const addon = loadAddon();
    const dev = new addon.Device(o.index ?? -1);
    try {
      const info = dev.info();
      const all = addon.listDevices();
      f.device = all.find((x) => x.index === o.index) ?? all.find((x) => x.name === info.name) ?? all[0];
      f.budgetBytes = info.memoryBudgetBytes;
      f.deviceLocalBytes = info.deviceLocalBytes;
      if (info.subgroupOps) f.subgroups = probeSubgroups(dev, new Pipelines(dev));
    } finally {
      dev.dispose();
    }
  } catch (e) {
    f.vulkanError = e instanceof Error ? e.message : String(e);
  }
  return f;
}

/** Printed lines, one a check, and a closing tally. */
export function doctorLines(checks: Check[]): string[] {
  const w = Math.max(...checks.map((c) => c.what.length));
  const lines = checks.map((c) => `${c.verdict.padEnd(4)}  ${c.what.padEnd(w)}  ${c.detail}`);
  const n = (v: Verdict) => checks.filter((c) => c.verdict === v).length;
  lines.push(`${n('fail') ? 'not ready' : n('warn') ? 'ready, with warnings' : 'ready'}: ${n('ok')} ok, ${n('warn')} warning(s), ${n('fail')} failure(s)`);
  return lines;
}
