/**
 * The driver's compiler statistics of a shader module (registers, spills, instructions: whatever
 * it reports through VK_KHR_pipeline_executable_properties) as one line, for the benches' --stats
 * and kernel-stats; `ok` false with the reason where there are none (lavapipe reports none).
 */
import { declOf } from '../../ts/engine/vulkan/graph.js';
import { bindingCounts, type KernelDecl } from '../../ts/engine/vulkan/kernels.js';
import type { VkDevice } from '../../ts/vk/addon.js';

/** `decl`: a module the engine does not declare (an experiment's, added at run time). */
export function pipelineStats(dev: VkDevice, name: string, decl?: KernelDecl): { ok: boolean; text: string } {
  try {
    const d = decl ?? declOf(name);
    return { ok: true, text: dev.pipelineStats(name, d.bindings.length, 4 * d.push.length, bindingCounts(d)).map(([k, v]) => `${k}=${v}`).join('; ') };
  } catch (e) {
    return { ok: false, text: (e as Error).message };
  }
}
