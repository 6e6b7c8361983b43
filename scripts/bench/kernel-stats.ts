/**
 * kernel-stats: the driver's compiler statistics (registers, spills, instructions: whatever it
 * reports through VK_KHR_pipeline_executable_properties) of the named shader modules, for kernel
 * tuning — registers bound how many workgroups share a multiprocessor.
 *   node dist/scripts/bench/kernel-stats.js deltanet_chunk attn_mmc_q8_0_q4_0 mmc_moe_glu_iq2_xxs …
 */
import { loadAddon } from '../../ts/vk/addon.js';
import { pipelineStats } from '../lib/pipeline-stats.js';

const names = process.argv.slice(2);
if (!names.length) { console.error('usage: kernel-stats MODULE…'); process.exit(2); }
const dev = new (loadAddon().Device)(-1);
let bad = 0;
for (const name of names) {
  const st = pipelineStats(dev, name);
  console.log(`${name}: ${st.text}`);
  if (!st.ok) bad++;
}
dev.dispose();
process.exit(bad ? 1 : 0);
