/**
 * bench-attn-tile: a prefill step's attention pair (attn_mmc where the device has matrix units,
 * and attn_tile, each followed by attn_merge) on the full model's shapes, isolated, for a
 * dispatch pair's tokens at several depths and with several key blocks per workgroup: GPU time of
 * each kernel (median of --reps, timestamps; attn_mmc's without its decode pass, which the rows
 * attn_decode_kv (once a layer: the caches) and attn_decode_q (once a pair) time). What the depth
 * schedule of the prefill blocks (ATTN_MMC_BLOCK, graph.ts) was chosen from. --variant-spv DIR:
 * each DIR/attn_<name>_<kv>.spv (an experiment with attn_tile's interface: scripts/experiments/attn)
 * runs as kernel attn_<name> too, its outputs compared with attn_mmc's (attn_tile's on a device
 * without it); --stats: the driver's compiler statistics of each kernel. --decode (a q8_0/q4_0
 * cache): the decode pass's buffers compared with the host's (scripts/lib/attn-decoded.ts), bit for bit.
 *   node dist/scripts/bench/bench-attn-tile.js [--pos 2048,8192,16384,30720] [--tokens 256] [--blk 256,512,1024,2048] [--kv q8_0/q4_0] [--reps 5] [--kernels attn_mmc,attn_tile] [--variant-spv DIR] [--decode] [--stats]
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { parseArgs } from 'node:util';
import { OpList, Pipelines, attnTileTokens } from '../../ts/engine/vulkan/graph.js';
import { KERNELS, dispatch, type KernelDecl } from '../../ts/engine/vulkan/kernels.js';
import { KV_TYPE_IDS } from '../../ts/engine/common.js';
import type { KvType } from '../../ts/engine/types.js';
import { rowBytes } from '../../ts/gguf/index.js';
import type { ModelShape } from '../../ts/model/shape.js';
import { PRESETS } from '../../ts/model/synthetic-model.js';
import { Rng } from '../../ts/model/synth.js';
import { loadAddon } from '../../ts/vk/addon.js';
import { pipelineStats } from '../lib/pipeline-stats.js';
import { addSpv } from '../lib/runtime-shaders.js';
import { gpuTime } from '../lib/gpu-time.js';
import { randomCacheRows } from '../lib/random-cache.js';
import { attnDecoded } from '../lib/attn-decoded.js';
import { attnDecodedLayout, attnOnMatrixUnits, dispatchAttnDecode } from '../../ts/engine/vulkan/attn-decoded.js';

const { values: a } = parseArgs({ options: {
  pos: { type: 'string', default: '2048,8192,16384,30720' }, tokens: { type: 'string', default: '256' },
  blk: { type: 'string', default: '256,512,1024,2048' }, kv: { type: 'string', default: 'q8_0/q4_0' },
  reps: { type: 'string', default: '5' }, kernels: { type: 'string', default: 'attn_mmc,attn_tile' },
  'variant-spv': { type: 'string' }, stats: { type: 'boolean', default: false }, decode: { type: 'boolean', default: false },
} });
const fail = (m: string): never => { console.error(`bench-attn-tile: ${m}`); process.exit(2); };
const [kType, vType] = a.kv!.split('/') as [KvType, KvType];
for (const t of [kType, vType]) if (!(t in KV_TYPE_IDS)) fail(`unknown cache type "${t}" (${Object.keys(KV_TYPE_IDS).join(', ')})`);
const list = (v: string, what: string) => v.split(',').map((x) => { const n = Number(x); if (!Number.isInteger(n) || n < 0) fail(`${what}: "${x}" is not a whole number`); return n; });
const positions = list(a.pos!, '--pos'), T = list(a.tokens!, '--tokens')[0], blocks = list(a.blk!, '--blk'), reps = Number(a.reps);
for (const b of blocks) if (!(b >= 64 && b % 64 === 0)) fail(`--blk ${b}: a multiple of the tiles' 64 keys`);
if (!(T >= 1)) fail('--tokens: at least 1');
if (!(reps >= 1)) fail(`--reps ${a.reps}: at least 1`);
if (a['variant-spv'] && !fs.existsSync(a['variant-spv'])) fail(`--variant-spv ${a['variant-spv']}: no such folder (scripts/experiments/attn/build.sh builds build/runtime-shaders/attn)`);
const addon = loadAddon();
const dev = new addon.Device(-1);
const info = dev.info();
const kernels: KernelDecl[] = a.kernels!.split(',').map((k) => {
  if (k !== 'attn_mmc' && k !== 'attn_tile') fail(`--kernels: "${k}" (attn_mmc, attn_tile)`);
  return KERNELS[k as 'attn_mmc' | 'attn_tile'];
}).filter((k) => k.name === 'attn_tile' || (attnOnMatrixUnits(info.coopmat, kType) && addon.shaderNames().includes(`attn_mmc_${kType}`)));
// the experiments' modules, each a kernel of attn_tile's interface
const more: KernelDecl[] = [];
if (a['variant-spv']) {
  const suffix = `_${kType}_${vType}.spv`;
  for (const f of fs.readdirSync(a['variant-spv']).filter((f) => f.startsWith('attn_') && f.endsWith(suffix)).sort()) {
    await addSpv(f.slice(0, -4), path.join(a['variant-spv'], f));
    more.push({ ...KERNELS.attn_tile, local: 512, name: f.slice(0, -suffix.length) });
  }
  if (!more.length) fail(`no attn_*${suffix} in ${a['variant-spv']}`);
  kernels.push(...more);
}
if (a.decode && (kType !== 'q8_0' || vType !== 'q4_0')) fail('--decode: a q8_0/q4_0 cache (the host builds those buffers)');
const pipes = new Pipelines(dev, more.map((k) => ({ ...k, name: `${k.name}_${kType}_${vType}` })));
const s = PRESETS.full as unknown as ModelShape;
const { nHead, nHeadKv, headDim: hd } = s;
const kvDim = nHeadKv * hd, qStride = 2 * nHead * hd, kRow = rowBytes(KV_TYPE_IDS[kType], kvDim), vRow = rowBytes(KV_TYPE_IDS[vType], kvDim);
const tq = attnTileTokens(s), rng = new Rng(7);
const ctx = Math.max(...positions) + T, minBlk = Math.min(...blocks), maxBlocks = Math.ceil(ctx / minBlk);
const kc = randomCacheRows(dev, kType, ctx, kvDim, rng), vc = randomCacheRows(dev, vType, ctx, kvDim, rng);
const Kc = kc.buffer, Vc = vc.buffer;
const QG = dev.createBuffer(T * qStride * 4, false), qHost = Float32Array.from({ length: T * qStride }, () => rng.normal() * 2);
dev.write(QG, 0, new Uint8Array(qHost.buffer));
// attn_mmc's operands, written by the engine's decode pass (attn_decode) as a step writes them
const decShape = { nHead, nHeadKv, hd, tokens: T, ctx }, L = attnDecodedLayout(decShape);
const D = { QD: dev.createBuffer(L.qBytes, false), KD: dev.createBuffer(L.kBytes, false), VD: dev.createBuffer(L.vBytes, false) };
/** the decode pass at PARAMS' depth: part 0 the caches up to the pair's last key, part 1 the pair's Q */
const decodePass = (ops: OpList, parts: (0 | 1)[]) => {
  const args = { bind: { QG, Kc, Vc, ...D, PARAMS }, nHead, nHeadKv, hd, qStride, kRowBytes: kRow, vRowBytes: vRow, ctx, layout: L, variant: `${kType}_${vType}` };
  for (const part of parts) dispatchAttnDecode(ops, args, { part, t0: 0, nTok: T });
};
const runOps = (build: (ops: OpList) => void) => {
  const ops = new OpList(pipes);
  build(ops);
  const cmd = dev.record(ops.build(), false);
  dev.runSync(cmd);
  dev.freeCommand(cmd);
};
const P = dev.createBuffer(T * nHead * maxBlocks * hd * 4, false), ML = dev.createBuffer(T * nHead * maxBlocks * 8, false);
const O = dev.createBuffer(T * nHead * hd * 4, true), PARAMS = dev.createBuffer(16, false);
console.log(`# bench-attn-tile ${new Date().toISOString()} ${info.name}: ${nHead}/${nHeadKv} heads of ${hd}, cache ${kType}/${vType}, ${T} tokens a pair, median of ${reps}`);
const moduleOf = (k: KernelDecl) => (k.name === 'attn_mmc' ? `attn_mmc_${kType}` : `${k.name}_${kType}_${vType}`);
if (a.stats) for (const k of kernels) console.log(`# stats ${moduleOf(k)}: ${pipelineStats(dev, moduleOf(k), more.includes(k) ? { ...k, name: moduleOf(k) } : undefined).text}`);
// the pair as a recorded step dispatches it for this context, blocks of blk (the grid covers the
// context; blocks past the tokens return at once); attn_mmc over the decoded operands
const attn = (ops: OpList, kernel: KernelDecl, blk: number) => {
  const nBlk = Math.ceil(ctx / blk), grid: [number, number, number] = [Math.ceil(T / tq), nHeadKv, nBlk];
  const push = { nHead, nHeadKv, hd, kRowBytes: kRow, vRowBytes: vRow, qStride, scale: 1 / Math.sqrt(hd), nBlk, blk, t0: 0, nTok: T, tq };
  if (kernel.name === 'attn_mmc') dispatch(ops, KERNELS.attn_mmc, { ...D, P, ML, PARAMS }, { ...push, kScales: L.kScales, vLo: L.vLo }, grid, { variant: kType });
  else dispatch(ops, kernel, { QG, Kc, Vc, P, ML, PARAMS }, push, grid, { variant: `${kType}_${vType}` });
};
const merge = (ops: OpList, blk: number) => dispatch(ops, KERNELS.attn_merge, { P, ML, QG, O, PARAMS }, { nHead, hd, nBlk: Math.ceil(ctx / blk), qStride, blk, t0: 0, grow: 0 }, [T, nHead]);
const atDepth = (pos: number) => dev.write(PARAMS, 0, new Uint8Array(Uint32Array.of(pos, T, 0, 0).buffer));
/** the outputs (the decode pass, the attention, attn_merge) of a kernel at a depth, blocks of blk */
const outputs = (kernel: KernelDecl, pos: number, blk: number): Float32Array => {
  atDepth(pos);
  runOps((ops) => { if (kernel.name === 'attn_mmc') decodePass(ops, [0, 1]); attn(ops, kernel, blk); merge(ops, blk); });
  return new Float32Array(dev.read(O, 0, T * nHead * hd * 4));
};
// each experiment's outputs against attn_mmc's (attn_tile's where the device lacks it), relative to the largest
const ref = kernels.find((k) => k.name === 'attn_mmc') ?? KERNELS.attn_tile;
for (const k of more) {
  for (const pos of [positions[0], positions[positions.length - 1]]) {
    const x = outputs(ref, pos, blocks[0]), y = outputs(k, pos, blocks[0]);
    let m = 0, big = 0;
    for (let i = 0; i < x.length; i++) { big = Math.max(big, Math.abs(x[i])); const e = Math.abs(x[i] - y[i]); if (!(e <= m)) m = e; }
    console.log(`# ${k.name} vs ${ref.name} at ${pos}: max |Δ| ${(m / big).toExponential(2)} of the largest`);
  }
}
if (a.decode) {
  // the GPU's buffers against the host's over the keys a pair at the last depth has (and Q)
  const pos = positions[positions.length - 1], keys = pos + T;
  const host = attnDecoded(dev, decShape, qHost, kc.chunk, vc.chunk, kc.rows);
  atDepth(pos);
  runOps((ops) => decodePass(ops, [0, 1]));
  const half = 4 * L.kScales, cmp = (what: string, buf: number, ref: number, ranges: [number, number][]) => {
    let bad = 0, n = 0;
    for (const [o, len] of ranges) {
      const x = new Uint32Array(dev.read(buf, o, len)), y = new Uint32Array(dev.read(ref, o, len));
      for (let i = 0; i < x.length; i++) { n++; if (x[i] !== y[i]) bad++; }
    }
    console.log(`# decode pass ${what}: ${bad} of ${n} words differ from the host's`);
  };
  cmp('Q', D.QD, host.q, [[0, T * nHead * hd * 2], [(T * nHead + 64) * hd * 2, T * nHead * hd * 2]]);
  cmp('K', D.KD, host.k, [[0, keys * kvDim * 2], [half, keys * (kvDim / 32) * 4]]);
  cmp('V', D.VD, host.v, [[0, keys * kvDim * 2], [half, keys * kvDim * 2]]);
  host.free();
}
console.log('kernel,pos,blk,workgroups,attn_us,merge_us,pair_us');
const usesDecoded = kernels.some((k) => k.name === 'attn_mmc');
for (const pos of usesDecoded ? positions : []) {
  atDepth(pos);
  for (const [name, part] of [['attn_decode_kv', 0], ['attn_decode_q', 1]] as const) {
    const td = gpuTime({ dev, pipes, reps, warmMs: 100 }, (ops: OpList) => decodePass(ops, [part])).seconds * 1e6;
    console.log(`${name},${pos},,,${td.toFixed(1)},,`);
  }
}
for (const kernel of kernels) {
  for (const pos of positions) {
    atDepth(pos);
    if (kernel.name === 'attn_mmc') runOps((ops) => decodePass(ops, [0, 1]));
    for (const blk of blocks) {
      const used = Math.ceil((pos + T) / blk);
      const ta = gpuTime({ dev, pipes, reps, warmMs: 200 }, (ops: OpList) => attn(ops, kernel, blk)).seconds * 1e6;
      const tm = gpuTime({ dev, pipes, reps, warmMs: 100 }, (ops: OpList) => merge(ops, blk)).seconds * 1e6;
      console.log(`${kernel.name},${pos},${blk},${Math.ceil(T / tq) * nHeadKv * used},${ta.toFixed(1)},${tm.toFixed(1)},${(ta + tm).toFixed(1)}`);
    }
  }
}
for (const b of [Kc, Vc, QG, P, ML, O, PARAMS, D.QD, D.KD, D.VD]) dev.freeBuffer(b);
dev.dispose();
