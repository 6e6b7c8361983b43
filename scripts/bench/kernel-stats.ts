/**
 * kernel-stats: the driver's compiler statistics (registers, spills, instructions: whatever it
 * reports through VK_KHR_pipeline_executable_properties) of the named shader modules, for kernel
 * tuning — registers bound how many workgroups share a multiprocessor.
 *   node dist/scripts/bench/kernel-stats.js deltanet_chunk attn_mmc_q8_0_q4_0 mmc_moe_glu_iq2_xxs …
 * A module's declaration (its bindings and push block) is the KERNELS entry its name begins with.
 */
import { KERNELS, bindingCounts } from '../../ts/engine/vulkan/kernels.js';
import { loadAddon } from '../../ts/vk/addon.js';

const names = process.argv.slice(2);
if (!names.length) { console.error('usage: kernel-stats MODULE…'); process.exit(2); }
const dev = new (loadAddon().Device)(-1);
let bad = 0;
for (const name of names) {
  const decl = Object.keys(KERNELS).filter((k) => name === k || name.startsWith(`${k}_`)).sort((x, y) => y.length - x.length)[0];
  if (!decl) { console.log(`${name}: no kernel declaration begins its name`); bad++; continue; }
  const d = KERNELS[decl as keyof typeof KERNELS];
  try {
    console.log(`${name}: ${dev.pipelineStats(name, d.bindings.length, 4 * d.push.length, bindingCounts(d)).map(([k, v]: [string, unknown]) => `${k}=${v}`).join('; ')}`);
  } catch (e) { console.log(`${name}: ${(e as Error).message}`); bad++; }
}
dev.dispose();
process.exit(bad ? 1 : 0);
