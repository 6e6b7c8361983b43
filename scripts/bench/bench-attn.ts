/**
 * bench-attn: a decode step's attention (attn_flash over the cache in blocks, then attn_merge) on
 * the model's shapes, isolated, at several depths: GPU time per call (median of --reps,
 * timestamps) and the cache bytes read per call as GB/s. The reps cycle through --copies caches
 * (ten layers' worth by default), so each call reads its cache from memory as a decode step's
 * ten attention layers do, not from the last call's L2.
 *   node dist/scripts/bench/bench-attn.js [--pos 2048,8192,32768] [--ctx 32808] [--kv q8_0/q4_0] [--blk 64 [--fixed]] [--reps 20] [--copies 10] [--stats]
 * (--ctx: the session's context, which fixes the blocks per head as in a recorded step; bench-vk
 * --frontiers 2048,32768 --gen 32 runs at 32808. --blk: the base block, default the engine's
 * attnBlock; decode blocks grow from it with the depth (shaders/attn_span.glsl), or with --fixed
 * stay that long. --stats: the driver's compiler statistics of the two kernels.)
 */
import { parseArgs } from 'node:util';
import { OpList, Pipelines, attnBlock, attnSpan } from '../../ts/engine/vulkan/graph.js';
import { KERNELS, dispatch } from '../../ts/engine/vulkan/kernels.js';
import { KV_TYPE_IDS } from '../../ts/engine/common.js';
import type { KvType } from '../../ts/engine/types.js';
import { rowBytes } from '../../ts/gguf/index.js';
import type { ModelShape } from '../../ts/model/shape.js';
import { PRESETS } from '../../ts/model/synthetic-model.js';
import { Rng } from '../../ts/model/synth.js';
import { loadAddon } from '../../ts/vk/addon.js';
import { gpuTime } from '../lib/gpu-time.js';
import { randomCache } from '../lib/random-cache.js';
import { pipelineStats } from '../lib/pipeline-stats.js';

const a = parseArgs({ options: {
  pos: { type: 'string', default: '2048,8192,32768' }, ctx: { type: 'string', default: '32808' }, kv: { type: 'string', default: 'q8_0/q4_0' },
  blk: { type: 'string' }, fixed: { type: 'boolean', default: false }, stats: { type: 'boolean', default: false }, reps: { type: 'string', default: '20' }, copies: { type: 'string', default: '10' },
} }).values;
// the full model's attention shape (make-model --preset full)
const s = PRESETS.full as unknown as ModelShape;
const [kType, vType] = a.kv!.split('/') as [KvType, KvType];
for (const t of [kType, vType]) if (!(t in KV_TYPE_IDS)) { console.error(`bench-attn: unknown cache type "${t}" (${Object.keys(KV_TYPE_IDS).join(', ')})`); process.exit(2); }
const ctx = Number(a.ctx), reps = Number(a.reps), copies = Number(a.copies);
const blk = a.blk ? Number(a.blk) : attnBlock(s, 1), nBlk = Math.ceil(ctx / blk), grow = a.fixed ? 0 : 1;
if (!(blk >= 1 && blk <= 512)) { console.error(`bench-attn: --blk ${blk} is not within 1 … 512`); process.exit(2); }
const positions = a.pos!.split(',').map(Number);
for (const p of positions) if (!(p >= 0 && p < ctx)) { console.error(`bench-attn: position ${p} is not within the context ${ctx}`); process.exit(2); }
const dev = new (loadAddon().Device)(-1);
const pipes = new Pipelines(dev);
const rng = new Rng(11);
const kvDim = s.nHeadKv * s.headDim, qStride = 2 * s.nHead * s.headDim;
const kRow = rowBytes(KV_TYPE_IDS[kType], kvDim), vRow = rowBytes(KV_TYPE_IDS[vType], kvDim);
const caches = Array.from({ length: copies }, () => ({ k: randomCache(dev, kType, ctx, kvDim, rng), v: randomCache(dev, vType, ctx, kvDim, rng) }));
const QG = dev.createBuffer(qStride * 4, false);
dev.write(QG, 0, new Uint8Array(Float32Array.from({ length: qStride }, () => rng.normal()).buffer));
const P = dev.createBuffer(s.nHead * nBlk * s.headDim * 4, false), ML = dev.createBuffer(s.nHead * nBlk * 8, false);
const O = dev.createBuffer(s.nHead * s.headDim * 4, false), PARAMS = dev.createBuffer(16, false);
const variant = `${kType}_${vType}`;
const push = { nHead: s.nHead, nHeadKv: s.nHeadKv, hd: s.headDim, kRowBytes: kRow, vRowBytes: vRow, qStride, scale: 1 / Math.sqrt(s.headDim), nBlk, blk, t0: 0, grow };
const flash = (ops: OpList, rep: number) => dispatch(ops, KERNELS.attn_flash, { QG, Kc: caches[rep % copies].k, Vc: caches[rep % copies].v, P, ML, PARAMS }, push, [1, s.nHeadKv, nBlk], { variant });
const merge = (ops: OpList) => dispatch(ops, KERNELS.attn_merge, { P, ML, QG, O, PARAMS }, { nHead: s.nHead, hd: s.headDim, nBlk, qStride, blk, t0: 0, grow }, [1, s.nHead]);
console.log(`# bench-attn ${new Date().toISOString()} ${dev.info().name}: ${s.nHead} q heads / ${s.nHeadKv} kv heads of ${s.headDim}, cache ${kType}/${vType}, ctx ${ctx}, base block ${blk} positions (${nBlk} blocks)${grow ? ', growing with depth' : ', fixed'}, reps ${reps}, ${copies} caches`);
console.log('position,block,attn_flash_us,attn_merge_us,cache_MB,flash_GB/s');
for (const p of positions) {
  dev.write(PARAMS, 0, new Uint8Array(Uint32Array.of(p, 1, 0, 0).buffer));
  const tf = gpuTime({ dev, pipes, reps, warmMs: 300 }, flash).seconds;
  const tm = gpuTime({ dev, pipes, reps, warmMs: 300 }, (ops) => merge(ops)).seconds;
  const bytes = (p + 1) * (kRow + vRow);
  console.log(`${p},${attnSpan(p, blk, grow)},${(tf * 1e6).toFixed(1)},${(tm * 1e6).toFixed(1)},${(bytes / 1e6).toFixed(1)},${(bytes / tf / 1e9).toFixed(1)}`);
}
if (a.stats) {
  // the driver's compiler statistics (registers bound occupancy)
  for (const name of [`attn_flash_${variant}`, 'attn_merge']) {
    console.log(`stats ${name}: ${pipelineStats(dev, name).text}`);
  }
}
dev.dispose();
