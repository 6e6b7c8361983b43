/**
 * bench-attn-tile: a prefill step's attention pair (attn_mmc where the device has matrix units,
 * and attn_tile, each followed by attn_merge) on the full model's shapes, isolated, for a
 * dispatch pair's tokens at several depths and with several key blocks per workgroup: GPU time of
 * each kernel (median of --reps, timestamps). What the depth schedule of the prefill blocks
 * (ATTN_MMC_BLOCK, graph.ts) was chosen from. --variant-spv DIR: each DIR/attn_<name>_<kv>.spv
 * (an experiment with attn_mmc's interface, built beside it) runs as kernel attn_<name> too, its
 * outputs compared with attn_mmc's (attn_tile's on a device without it; attn_mmg* read decoded
 * operands built here: scripts/lib/attn-decoded.ts); --stats: the driver's compiler statistics of each kernel.
 * --decode (with attn_mmg* / attn_mmh* in DIR): DIR/decode_attn_<kv>.spv (scripts/experiments/attn/attn_decode.comp)
 * writes those buffers on the GPU too: compared with the host's, and timed at each depth.
 *   node dist/scripts/bench/bench-attn-tile.js [--pos 2048,8192,16384,30720] [--tokens 256] [--blk 256,512,1024,2048] [--kv q8_0/q4_0] [--reps 5] [--kernels attn_mmc,attn_tile] [--variant-spv DIR [--decode]] [--stats]
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
import { attnDecoded, attnDecodedLayout } from '../lib/attn-decoded.js';

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
}).filter((k) => k.name === 'attn_tile' || (info.coopmat && addon.shaderNames().includes(`attn_mmc_${kType}_${vType}`)));
// the experiments' modules, each a kernel of attn_mmc's interface
const more: KernelDecl[] = [];
if (a['variant-spv']) {
  const suffix = `_${kType}_${vType}.spv`;
  for (const f of fs.readdirSync(a['variant-spv']).filter((f) => f.startsWith('attn_') && f.endsWith(suffix)).sort()) {
    await addSpv(f.slice(0, -4), path.join(a['variant-spv'], f));
    more.push({ ...KERNELS.attn_mmc, name: f.slice(0, -suffix.length) });
  }
  if (!more.length) fail(`no attn_*${suffix} in ${a['variant-spv']}`);
  kernels.push(...more);
}
// the decode pass (--decode) of the experiments reading decoded operands: its own buffers, the host's layouts
/** the experiments that read Q, K and V decoded once (attn_mmg*, attn_mmh*) */
const readsDecoded = (k: KernelDecl) => k.name.startsWith('attn_mmg') || k.name.startsWith('attn_mmh');
const DECODE: KernelDecl = { name: `decode_attn_${kType}_${vType}`, bindings: ['QG', 'Kc', 'Vc', 'QD', 'KD', 'VD', 'PARAMS'], push: ['nHead', 'nHeadKv', 'hd', 'kRowBytes', 'vRowBytes', 'qStride', 'nTok', 't0', 'kScales', 'vLo', 'rowsOut', '_'], local: 256 };
if (a.decode && !more.some(readsDecoded)) fail('--decode: needs attn_mmg* or attn_mmh* in --variant-spv');
if (a.decode) await addSpv(DECODE.name, path.join(a['variant-spv']!, `${DECODE.name}.spv`));
const pipes = new Pipelines(dev, [...more.map((k) => ({ ...k, name: `${k.name}_${kType}_${vType}` })), ...(a.decode ? [DECODE] : [])]);
const s = PRESETS.full as unknown as ModelShape;
const { nHead, nHeadKv, headDim: hd } = s;
const kvDim = nHeadKv * hd, qStride = 2 * nHead * hd, kRow = rowBytes(KV_TYPE_IDS[kType], kvDim), vRow = rowBytes(KV_TYPE_IDS[vType], kvDim);
const tq = attnTileTokens(s), rng = new Rng(7);
const ctx = Math.max(...positions) + T, minBlk = Math.min(...blocks), maxBlocks = Math.ceil(ctx / minBlk);
const kc = randomCacheRows(dev, kType, ctx, kvDim, rng), vc = randomCacheRows(dev, vType, ctx, kvDim, rng);
const Kc = kc.buffer, Vc = vc.buffer;
const QG = dev.createBuffer(T * qStride * 4, false), qHost = Float32Array.from({ length: T * qStride }, () => rng.normal() * 2);
dev.write(QG, 0, new Uint8Array(qHost.buffer));
// kernels named attn_mmg* (scripts/experiments/attn/attn_mmg.comp) read Q, K and V decoded once, in
// buffers built here from the same values (their layouts: scripts/lib/attn-decoded.ts)
const direct = more.some(readsDecoded);
if (direct && (kType !== 'q8_0' || vType !== 'q4_0' || hd !== 256)) fail('attn_mmg* / attn_mmh*: a q8_0/q4_0 cache and hd 256 only');
const decShape = { nHead, nHeadKv, hd, tokens: T, ctx }, decLayout = attnDecodedLayout(decShape);
const dec = direct ? attnDecoded(dev, decShape, qHost, kc.chunk, vc.chunk, kc.rows) : undefined;
const out = a.decode ? { q: dev.createBuffer(decLayout.qBytes, false), k: dev.createBuffer(decLayout.kBytes, false), v: dev.createBuffer(decLayout.vBytes, false) } : undefined;
/** the decode pass for a step at depth pos: keys up to pos + T − 1, then 64 rows of zeros */
const decodePass = (ops: OpList, pos: number) => {
  const rowsOut = pos + T + 64, n = Math.max(rowsOut * kvDim / 4, T * nHead * hd / 4);
  dispatch(ops, DECODE, { QG, Kc, Vc, QD: out!.q, KD: out!.k, VD: out!.v, PARAMS }, { nHead, nHeadKv, hd, kRowBytes: kRow, vRowBytes: vRow, qStride, nTok: T, t0: 0, kScales: dec!.kScales, vLo: dec!.vLo, rowsOut }, [Math.ceil(n / 256), 2, 1]);
};
const P = dev.createBuffer(T * nHead * maxBlocks * hd * 4, false), ML = dev.createBuffer(T * nHead * maxBlocks * 8, false);
const O = dev.createBuffer(T * nHead * hd * 4, true), PARAMS = dev.createBuffer(16, false);
console.log(`# bench-attn-tile ${new Date().toISOString()} ${info.name}: ${nHead}/${nHeadKv} heads of ${hd}, cache ${kType}/${vType}, ${T} tokens a pair, median of ${reps}`);
if (a.stats) for (const k of kernels) console.log(`# stats ${k.name}_${kType}_${vType}: ${pipelineStats(dev, `${k.name}_${kType}_${vType}`, more.includes(k) ? { ...k, name: `${k.name}_${kType}_${vType}` } : undefined).text}`);
// the pair as a recorded step dispatches it for this context, blocks of blk (the grid covers the
// context; blocks past the tokens return at once)
const attn = (ops: OpList, kernel: KernelDecl, blk: number) => {
  const nBlk = Math.ceil(ctx / blk);
  const d = readsDecoded(kernel) ? dec! : undefined;
  dispatch(ops, kernel, d ? { QG: d.q, Kc: d.k, Vc: d.v, P, ML, PARAMS } : { QG, Kc, Vc, P, ML, PARAMS }, { nHead, nHeadKv, hd, kRowBytes: d ? d.kScales : kRow, vRowBytes: d ? d.vLo : vRow, qStride, scale: 1 / Math.sqrt(hd), nBlk, blk, t0: 0, grow: 0, nTok: T, tq }, [Math.ceil(T / tq), nHeadKv, nBlk], { variant: `${kType}_${vType}` });
};
const merge = (ops: OpList, blk: number) => dispatch(ops, KERNELS.attn_merge, { P, ML, QG, O, PARAMS }, { nHead, hd, nBlk: Math.ceil(ctx / blk), qStride, blk, t0: 0, grow: 0 }, [T, nHead]);
/** the outputs (attention + attn_merge) of a kernel at a depth, blocks of blk */
const outputs = (kernel: KernelDecl, pos: number, blk: number): Float32Array => {
  dev.write(PARAMS, 0, new Uint8Array(Uint32Array.of(pos, T, 0, 0).buffer));
  const ops = new OpList(pipes);
  attn(ops, kernel, blk);
  merge(ops, blk);
  const cmd = dev.record(ops.build(), false);
  dev.runSync(cmd);
  dev.freeCommand(cmd);
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
  // the GPU's buffers against the host's over the keys a step at the last depth writes (and Q)
  const pos = positions[positions.length - 1], keys = pos + T;
  dev.write(PARAMS, 0, new Uint8Array(Uint32Array.of(pos, T, 0, 0).buffer));
  const ops = new OpList(pipes);
  decodePass(ops, pos);
  const cmd = dev.record(ops.build(), false);
  dev.runSync(cmd);
  dev.freeCommand(cmd);
  const half = 4 * decLayout.kScales, cmp = (what: string, buf: number, ref: number, ranges: [number, number][]) => {
    let bad = 0, n = 0;
    for (const [o, len] of ranges) {
      const x = new Uint32Array(dev.read(buf, o, len)), y = new Uint32Array(dev.read(ref, o, len));
      for (let i = 0; i < x.length; i++) { n++; if (x[i] !== y[i]) bad++; }
    }
    console.log(`# decode pass ${what}: ${bad} of ${n} words differ from the host's`);
  };
  cmp('Q', out!.q, dec!.q, [[0, T * nHead * hd * 2], [(T * nHead + 64) * hd * 2, T * nHead * hd * 2]]);
  cmp('K', out!.k, dec!.k, [[0, keys * kvDim * 2], [half, keys * (kvDim / 32) * 4]]);
  cmp('V', out!.v, dec!.v, [[0, keys * kvDim * 2], [half, keys * kvDim * 2]]);
}
console.log('kernel,pos,blk,workgroups,attn_us,merge_us,pair_us');
if (a.decode) for (const pos of positions) {
  dev.write(PARAMS, 0, new Uint8Array(Uint32Array.of(pos, T, 0, 0).buffer));
  const td = gpuTime({ dev, pipes, reps, warmMs: 100 }, (ops: OpList) => decodePass(ops, pos)).seconds * 1e6;
  console.log(`attn_decode,${pos},,,${td.toFixed(1)},,`);
}
for (const kernel of kernels) {
  for (const pos of positions) {
    dev.write(PARAMS, 0, new Uint8Array(Uint32Array.of(pos, T, 0, 0).buffer));
    for (const blk of blocks) {
      const used = Math.ceil((pos + T) / blk);
      const ta = gpuTime({ dev, pipes, reps, warmMs: 200 }, (ops: OpList) => attn(ops, kernel, blk)).seconds * 1e6;
      const tm = gpuTime({ dev, pipes, reps, warmMs: 100 }, (ops: OpList) => merge(ops, blk)).seconds * 1e6;
      console.log(`${kernel.name},${pos},${blk},${Math.ceil(T / tq) * nHeadKv * used},${ta.toFixed(1)},${tm.toFixed(1)},${(ta + tm).toFixed(1)}`);
    }
  }
}
for (const b of [Kc, Vc, QG, P, ML, O, PARAMS]) dev.freeBuffer(b);
dec?.free();
for (const b of out ? [out.q, out.k, out.v] : []) dev.freeBuffer(b);
dev.dispose();
