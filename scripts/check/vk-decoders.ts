/**
 * vk-decoders: every block type's Vulkan decoder against the oracle's values, bit for bit,
 * through mm, matmul and matvec (scripts/lib/decoder-check.ts) on the first real GPU.
 *
 *   node dist/scripts/check/vk-decoders.js [QUANT_DIR (default fixtures/quant)] [--device N]
 */
import { loadAddon } from '../../ts/vk/addon.js';
import { BLOCK_TYPES, COOPMAT_PATH, DecoderChecker, KERNEL_PATHS, type KernelPath } from '../lib/decoder-check.js';

const di = process.argv.indexOf('--device');
const dev = new (loadAddon().Device)(di > 0 ? Number(process.argv[di + 1]) : -1);
const dir = process.argv[2] && !process.argv[2].startsWith('--') ? process.argv[2] : 'fixtures/quant';
console.log(`# vk-decoders on ${dev.info().name} (${dev.info().driver})`);
let failed = 0, checked = 0;
const checker = new DecoderChecker(dev, dir);
// the matrix-unit kernel where the device has the units and the addon the modules
const paths: KernelPath[] = [...KERNEL_PATHS, ...(dev.info().coopmat && loadAddon().shaderNames().includes('mmc_q8_0') ? [COOPMAT_PATH] : [])];
for (const t of BLOCK_TYPES) {
  for (const k of paths) {
    const r = checker.check(t, k);
    checked += r.checked;
    if (r.bad) failed++;
    console.log(`${r.bad ? 'FAIL' : 'ok  '} ${t.name.padEnd(8)} ${r.shader.padEnd(16)} ${r.checked} values${r.bad ? `: ${r.bad} differ (${r.first})` : ''}`);
  }
}
console.log(`${BLOCK_TYPES.length} block types × ${paths.length} kernels, ${checked} values: ${failed} failure(s)`);
dev.dispose();
process.exitCode = failed ? 1 : 0;
