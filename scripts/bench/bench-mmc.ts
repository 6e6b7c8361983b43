/**
 * bench-mmc: GPU time of the prefill matmuls in the model's shapes, on random weights of the q2
 * recipe's types: the dense DeltaNet in-projection (q8_0, 8192 × 2048), the shared expert's gate+up
 * (q8_0 GLU, 512 rows × 2048), the routed gate+up (iq2_xxs
 * GLU, 256 experts × 512 rows × 2048) and down (q2_k, 256 × 2048 × 512) for a chunk of T tokens
 * with 8 experts a token. Each form runs on the f32 tiles (mm) and on the matrix units (mmc) and
 * prints both times (the median over --reps runs of a command of 8 such dispatches) and the largest |Δ|
 * between them relative to the largest |y|. --variant P runs P_<type> in place of mmc_<type>
 * (a kernel experiment built beside mmc, embedded or, --variant-spv DIR, DIR/P_<type>.spv added at
 * run time: scripts/experiments/tiles/build.sh); --variant-pairs N gives the variant's routed
 * tiles N pairs (moe_tiles' BN; the engine's MMC_MOE_PAIRS otherwise). --variant-of mm: the
 * variant replaces mm_<type> instead (an f32-tile experiment, scripts/experiments/tiles-f32), run
 * beside mm with mm's dispatch; no matrix units needed. --small: the same forms in small shapes
 * (dense 320 × 256, 16 experts of 256 rows, H 256), no warm-up: a check of a variant's outputs
 * on a CPU device (lavapipe), not a timing.
 *
 *   node dist/scripts/bench/bench-mmc.js [--tokens 512,2048] [--reps 5] [--variant mmcx [--variant-spv DIR] [--variant-pairs N] [--variant-of mmc|mm]] [--small] [--device N]
 */
import { parseArgs } from 'node:util';
import { Core } from '../../ts/core/wasm.js';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { KernelDecl } from '../../ts/engine/vulkan/kernels.js';
import { MV, OpList, Pipelines, declOf, gridBlob, matvecOp, MMC_MOE_PAIRS, MM_MOE_PAIRS, type MatvecDispatch } from '../../ts/engine/vulkan/graph.js';
import { tilesFor } from '../../ts/engine/vulkan/expert-stream.js';
import { loadAddon } from '../../ts/vk/addon.js';
import { Rng } from '../../ts/model/synth.js';
import { pipelineStats } from '../lib/pipeline-stats.js';
import { randomFloats, randomWeights } from '../lib/random-weights.js';
import { addSpv } from '../lib/runtime-shaders.js';

const { values: a } = parseArgs({ options: {
  tokens: { type: 'string', default: '512,2048' }, reps: { type: 'string', default: '10' }, variant: { type: 'string' }, device: { type: 'string', default: '-1' },
  'variant-spv': { type: 'string' }, 'variant-pairs': { type: 'string' }, 'variant-of': { type: 'string', default: 'mmc' },
  small: { type: 'boolean', default: false },
} });
const of = a['variant-of']!;
if (of !== 'mmc' && of !== 'mm') { console.error(`bench-mmc: --variant-of takes mmc or mm, not ${of}`); process.exit(2); }
if (of === 'mm' && !a.variant) { console.error('bench-mmc: --variant-of mm needs --variant'); process.exit(2); }
const dev = new (loadAddon().Device)(Number(a.device));
if (of === 'mmc' && !dev.info().coopmat) { console.error(`bench-mmc: ${dev.info().name} has no usable matrix units`); process.exit(2); }
const variant = a.variant;
/** mmc_* (or, --variant-of mm, mm_*) renamed to the variant's modules (same interface: they include mmc.glsl or mm.glsl) */
class VariantPipelines extends Pipelines {
  /** the module each replaced name ran as */
  readonly used = new Map<string, string>();
  override get(name: string): number {
    if (!variant || !name.startsWith(`${of}_`)) return super.get(name);
    // a form the variant does not build runs as the engine's
    const v = `${variant}_${name.slice(of.length + 1)}`;
    try { const id = super.get(v); this.used.set(name, v); return id; } catch { return super.get(name); }
  }
}
// run-time modules: each P_<rest>.spv declared as mmc_<rest> (or mm_<rest>: the same interface)
const more: KernelDecl[] = [];
if (a['variant-spv']) {
  if (!variant) { console.error('bench-mmc: --variant-spv needs --variant'); process.exit(2); }
  for (const f of fs.readdirSync(a['variant-spv']).filter((f) => f.startsWith(`${variant}_`) && f.endsWith('.spv'))) {
    const name = f.slice(0, -4);
    await addSpv(name, path.join(a['variant-spv'], f));
    more.push({ ...declOf(`${of}_${name.slice(variant.length + 1)}`), name });
  }
}
const pipes = new Pipelines(dev), vpipes = new VariantPipelines(dev, more);
const variantPairs = a['variant-pairs'] ? Number(a['variant-pairs']) : MMC_MOE_PAIRS;
const rng = new Rng(11);
const reps = Number(a.reps);
// device-local buffers, as the engine's weights and scratch (host-visible ones put PCIe reads in the timings)
const buf = (x: Uint8Array) => { const b = dev.createBuffer(x.byteLength, false); dev.write(b, 0, x); return b; };
const g = gridBlob(new Core());
const grid = dev.createBuffer(g.byteLength, false);
dev.write(grid, 0, g);

const weights = (type: string, rows: number, n: number) => randomWeights(rng, type, rows, n);
const floats = (n: number) => randomFloats(rng, n);

function run(p: Pipelines, d: MatvecDispatch, yLen: number): { ms: number; y: Float32Array; shader: string } {
  // the dispatch 8 times back to back in one command (the clocks up, as in a prefill step), the
  // command run `reps` times: the median of every dispatch's time
  const ops = new OpList(p);
  for (let i = 0; i < 8; i++) matvecOp(ops, d);
  const cmd = dev.record(ops.build(), true);
  const ts: number[] = [];
  for (let r = 0; r < reps; r++) { dev.runSync(cmd); ts.push(...Array.from(dev.timings(cmd), (x) => x / 1e6)); }
  dev.freeCommand(cmd);
  ts.sort((x, y) => x - y);
  const y = new Float32Array(dev.read(d.buffers[2], 0, yLen * 4));
  const name = ops.names[0].split(' ')[0];
  return { ms: ts[ts.length >> 1], y, shader: p instanceof VariantPipelines ? p.used.get(name) ?? name : name };
}

const stated = new Set<string>();
function compare(label: string, d: MatvecDispatch, yLen: number, coopmatTiles?: MatvecDispatch['moe']): void {
  const Y = dev.createBuffer(yLen * 4, false);
  const into: MatvecDispatch = { ...d, buffers: [d.buffers[0], d.buffers[1], Y, d.buffers[3], d.buffers[4]], coopmat: false };
  const base = run(pipes, into, yLen);
  // a variant of mm runs with mm's dispatch; one of mmc with mmc's (its routed tiles' size)
  const fast = run(vpipes, of === 'mm' ? into : { ...into, coopmat: true, moe: coopmatTiles ?? d.moe }, yLen);
  dev.freeBuffer(Y);
  for (const name of [base.shader, fast.shader]) {
    if (stated.has(name)) continue;
    stated.add(name);
    console.log(`  stats ${name}: ${pipelineStats(dev, name, more.find((d) => d.name === name)).text}`);
  }
  let m = 0, big = 0;
  for (let i = 0; i < yLen; i++) { big = Math.max(big, Math.abs(base.y[i])); m = Math.max(m, Math.abs(base.y[i] - fast.y[i])); }
  console.log(`${label.padEnd(30)} ${base.shader} ${base.ms.toFixed(3)} ms   ${fast.shader} ${fast.ms.toFixed(3)} ms   ×${(base.ms / fast.ms).toFixed(2)}   max |Δ|/|y| ${(m / big).toExponential(2)}`);
}

console.log(`# bench-mmc on ${dev.info().name}; ${new Date().toISOString()}; variant ${variant ?? 'mmc'}${of === 'mm' ? ' of mm' : ''}; median of ${reps}`);
const { E, K, FF, H, D } = a.small ? { E: 16, K: 8, FF: 256, H: 256, D: 320 } : { E: 256, K: 8, FF: 512, H: 2048, D: 8192 };
const dq = weights('q8_0', D, H), W8 = buf(dq.bytes);
const gu = weights('iq2_xxs', E * 2 * FF, H), WGU = buf(gu.bytes);
const dn = weights('q2_k', E * H, FF), WDN = buf(dn.bytes);
const sh = weights('q8_0', 2 * FF, H), WSH = buf(sh.bytes);
// warm-up: the clocks up before the first timing (about a second of GPU work)
if (!a.small) {
  const X = buf(floats(2048 * H)), Y = dev.createBuffer(2048 * 8192 * 4, false), ids = dev.createBuffer(16, false);
  const ops = new OpList(pipes);
  for (let i = 0; i < 50; i++) matvecOp(ops, { type: 'q8_0', buffers: [W8, X, Y, ids, grid], rows: 8192, n: H, rowBytes: dq.rowBytes, nRows: 2048 });
  const cmd = dev.record(ops.build());
  for (let r = 0; r < 4; r++) dev.runSync(cmd);
  dev.freeCommand(cmd);
  [X, Y, ids].forEach((b) => dev.freeBuffer(b));
}
for (const T of a.tokens!.split(',').map(Number)) {
  const X = buf(floats(T * H)), XP = buf(floats(T * K * FF));
  const ids = dev.createBuffer(16, false);
  compare(`dense q8_0 ${D}×${H} T=${T}`, { type: 'q8_0', buffers: [W8, X, 0, ids, grid], rows: D, n: H, rowBytes: dq.rowBytes, nRows: T }, T * D);
  compare(`shared GLU q8_0 ${FF}×${H} T=${T}`, { type: 'q8_0', buffers: [WSH, X, 0, ids, grid], rows: FF, n: H, rowBytes: sh.rowBytes, nRows: T, flags: MV.glu, upBytes: FF * sh.rowBytes }, T * FF);
  // 8 distinct experts a token, uniformly at random
  const eOf: number[] = [];
  for (let t = 0; t < T; t++) { const s = new Set<number>(); while (s.size < K) s.add(rng.int(0, E - 1)); eOf.push(...s); }
  // the pairs grouped by expert as moe_tiles groups them: one LIST (the same order for any tile
  // size), the tiles of mm_moe's and of mmc_moe's size
  const slots = Uint32Array.from(eOf), LIST = buf(new Uint8Array(tilesFor(slots, MM_MOE_PAIRS).list.buffer));
  const moe = (bn: number) => { const { tiles } = tilesFor(slots, bn); return { tiles: buf(new Uint8Array(tiles.buffer)), maxTiles: tiles[0], ids }; };
  const mm = moe(MM_MOE_PAIRS), mc = moe(variantPairs);
  compare(`experts gate+up iq2_xxs T=${T}`, { type: 'iq2_xxs', buffers: [WGU, X, 0, LIST, grid], rows: FF, n: H, rowBytes: gu.rowBytes, nRows: T * K, flags: MV.glu, K, expertBytes: 2 * FF * gu.rowBytes, upBytes: FF * gu.rowBytes, yStride: FF, moe: mm }, T * K * FF, mc);
  compare(`experts down q2_k T=${T}`, { type: 'q2_k', buffers: [WDN, XP, 0, LIST, grid], rows: H, n: FF, rowBytes: dn.rowBytes, nRows: T * K, flags: MV.ownRow, K, expertBytes: H * dn.rowBytes, yStride: H, moe: mm }, T * K * H, mc);
}
dev.dispose();
