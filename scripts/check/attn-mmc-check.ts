/**
 * attn-mmc-check: prefill attention on the matrix units (the step's decode pass attn_decode, then
 * attn_mmc) against the f32 tiles (attn_tile) on random data, each followed by attn_merge: the
 * largest |Δ| of the outputs relative to their largest |value|, and the GPU time of each kernel
 * (median of --reps, timestamps; attn_mmc's without the decode pass) for a dispatch pair's tokens
 * at each depth. Needs a device with matrix units: the engine's modules (16 × 16 × 16 products,
 * the H200), or, with --fragment 8, attn_mmc built at run time with 8 × 8 × 8 products and the
 * device's subgroup size (Mesa 26's lavapipe: scripts/check/lavapipe-coopmat.sh; its times mean
 * nothing; --threads: that build's workgroup size; --source: a kernel of attn_tile's interface to
 * build and check in attn_mmc's place, an experiment's: scripts/experiments/attn, with
 * --define NAME[=VALUE][,…] added to its defines). An f32 K is not exact in f16: the engine keeps
 * attn_tile there, so only --source checks one.
 *
 *   node dist/scripts/check/attn-mmc-check.js [--pos 0,130,2500,8192,30720] [--tokens 33,256] [--kv q8_0/q4_0] [--reps 10] [--fragment 16|8 [--threads 256|512] [--source FILE [--define NAME]]]
 *
 * Shapes: the full model's (16 query heads, 2 KV heads of 256) and a small one (8 / 2 of 64).
 */
import { parseArgs } from 'node:util';
import * as fs from 'node:fs';
import { ROOT } from '../../ts/paths.js';
import { addModules, smallFragmentCompiler } from '../lib/runtime-shaders.js';
import { OpList, Pipelines, attnBlock, attnTileTokens } from '../../ts/engine/vulkan/graph.js';
import { attnDecodedLayout, attnOnMatrixUnits, dispatchAttnDecode } from '../../ts/engine/vulkan/attn-decoded.js';
import { KERNELS, bindingList, dispatch, pushWords, type KernelDecl } from '../../ts/engine/vulkan/kernels.js';
import { KV_TYPE_IDS } from '../../ts/engine/common.js';
import type { KvType } from '../../ts/engine/types.js';
import { rowBytes } from '../../ts/gguf/index.js';
import type { ModelShape } from '../../ts/model/shape.js';
import { Rng, fillRandom } from '../../ts/model/synth.js';
import { loadAddon } from '../../ts/vk/addon.js';
import { gpuTime } from '../lib/gpu-time.js';

const { values: a } = parseArgs({ options: {
  pos: { type: 'string', default: '0,130,2500,8192,30720' }, tokens: { type: 'string', default: '33,256' },
  kv: { type: 'string', default: 'q8_0/q4_0' }, reps: { type: 'string', default: '10' }, device: { type: 'string', default: '-1' },
  fragment: { type: 'string', default: '16' }, threads: { type: 'string' }, source: { type: 'string' }, define: { type: 'string' },
} });
const [kType, vType] = a.kv!.split('/') as [KvType, KvType];
for (const t of [kType, vType]) if (!(t in KV_TYPE_IDS)) { console.error(`attn-mmc-check: unknown cache type "${t}" (${Object.keys(KV_TYPE_IDS).join(', ')})`); process.exit(2); }
const addon = loadAddon();
const dev = new addon.Device(Number(a.device));
const info = dev.info(), fragment = Number(a.fragment);
if (a.source !== undefined && (fragment !== 8 || !fs.existsSync(a.source))) { console.error(`attn-mmc-check: --source ${a.source}: a shader file, with --fragment 8`); process.exit(2); }
if (a.define !== undefined && a.source === undefined) { console.error('attn-mmc-check: --define needs --source'); process.exit(2); }
if (a.threads !== undefined && (fragment !== 8 || !['256', '512'].includes(a.threads))) { console.error(`attn-mmc-check: --threads ${a.threads}: 256 or 512, with --fragment 8`); process.exit(2); }
if (a.source === undefined && !attnOnMatrixUnits(true, kType)) { console.error(`attn-mmc-check: an ${kType} K runs attn_tile on every device (its values are not exact in f16): nothing to check`); process.exit(2); }
/** the module checked: the engine's attn_mmc (over the decoded operands), its 8 × 8 × 8 build, or --source's (attn_tile's interface) */
let mmcModule = `attn_mmc_${kType}`;
let pipes: Pipelines;
if (fragment === 16) {
  if (!info.coopmat || !addon.shaderNames().includes(mmcModule)) { console.error(`attn-mmc-check: ${info.name} has no usable matrix units, or this build lacks attn_mmc`); process.exit(2); }
  pipes = new Pipelines(dev);
} else if (fragment === 8) {
  const glslc = smallFragmentCompiler('attn-mmc-check', info);
  // the cache types' defines, as the build gives them (shaders/variants.json)
  const variants = JSON.parse(fs.readFileSync(`${ROOT}/shaders/variants.json`, 'utf8')) as Record<string, Record<string, string[]>>;
  const defs = a.source === undefined ? variants['attn_mmc.comp'][kType] : variants['attn_tile.comp'][`${kType}_${vType}`];
  const mmc: KernelDecl = a.source === undefined ? KERNELS.attn_mmc : { ...KERNELS.attn_tile, local: Number(a.threads ?? 512) };
  mmcModule = a.source === undefined ? `attn_mmc${fragment}_${kType}` : `attn_src${fragment}_${kType}_${vType}`;
  await addModules([{ name: mmcModule, source: a.source ?? 'shaders/attn_mmc.comp', defines: [...defs.map((d) => d.replace(/^-D/, '')), `CM=${fragment}u`, `SG=${info.subgroupSize}u`, ...(a.threads ? [`NT=${a.threads}`] : []), ...(a.define ? a.define.split(',') : [])] }], glslc);
  pipes = new Pipelines(dev, [{ ...mmc, name: mmcModule }]);
} else {
  console.error(`attn-mmc-check: --fragment ${a.fragment}: 16 (the engine's modules) or 8`);
  process.exit(2);
}
const rng = new Rng(5);
const reps = Number(a.reps);
let worst = 0;
console.log(`# attn-mmc-check ${new Date().toISOString()} ${dev.info().name}, cache ${kType}/${vType}`);
console.log('heads,hd,tokens,pos,max_rel_diff,ml_rel_diff,nan_outputs,attn_tile_us,attn_mmc_us,x');
for (const [nHead, nHeadKv, hd] of [[16, 2, 256], [8, 2, 64]] as const) {
  const s = { nHead, nHeadKv, headDim: hd } as ModelShape;
  const kvDim = nHeadKv * hd, qStride = 2 * nHead * hd, kRow = rowBytes(KV_TYPE_IDS[kType], kvDim), vRow = rowBytes(KV_TYPE_IDS[vType], kvDim);
  for (const T of a.tokens!.split(',').map(Number)) {
    for (const pos of a.pos!.split(',').map(Number)) {
      const ctx = pos + T, blk = attnBlock(s, T, true, true), nBlk = Math.ceil(ctx / blk), tq = attnTileTokens(s);
      const fill = (type: KvType, rb: number) => {
        const b = dev.createBuffer(ctx * rb, false), bytes = new Uint8Array(ctx * rb);
        fillRandom(KV_TYPE_IDS[type], bytes, ctx * kvDim, rng, { sigma: 1 });
        dev.write(b, 0, bytes);
        return b;
      };
      const Kc = fill(kType, kRow), Vc = fill(vType, vRow);
      const QG = dev.createBuffer(T * qStride * 4, false);
      dev.write(QG, 0, new Uint8Array(Float32Array.from({ length: T * qStride }, () => rng.normal() * 2).buffer));
      const P = dev.createBuffer(T * nHead * nBlk * hd * 4, false), ML = dev.createBuffer(T * nHead * nBlk * 8, false);
      const O = dev.createBuffer(T * nHead * hd * 4, true), PARAMS = dev.createBuffer(16, false);
      dev.write(PARAMS, 0, new Uint8Array(Uint32Array.of(pos, T, 0, 0).buffer));
      const push = { nHead, nHeadKv, hd, kRowBytes: kRow, vRowBytes: vRow, qStride, scale: 1 / Math.sqrt(hd), nBlk, blk, t0: 0, grow: 0, nTok: T, tq };
      const grid: [number, number, number] = [Math.ceil(T / tq), nHeadKv, nBlk];
      // the engine's form reads the operands its decode pass wrote (attn-decoded.ts), as a step does
      const L = attnDecodedLayout({ nHead, nHeadKv, hd, tokens: T, ctx }), decoded = a.source === undefined;
      const D = decoded ? { QD: dev.createBuffer(L.qBytes, false), KD: dev.createBuffer(L.kBytes, false), VD: dev.createBuffer(L.vBytes, false) } : undefined;
      const decode = (ops: OpList) => {
        const args = { bind: { QG, Kc, Vc, ...D!, PARAMS }, nHead, nHeadKv, hd, qStride, kRowBytes: kRow, vRowBytes: vRow, ctx, layout: L, variant: `${kType}_${vType}` };
        dispatchAttnDecode(ops, args, { part: 0, t0: 0, nTok: T, barrier: false });
        dispatchAttnDecode(ops, args, { part: 1, t0: 0, nTok: T });
      };
      const attn = (ops: OpList, kernel: 'attn_tile' | 'attn_mmc') => {
        if (kernel === 'attn_tile') dispatch(ops, KERNELS.attn_tile, { QG, Kc, Vc, P, ML, PARAMS }, push, grid, { variant: `${kType}_${vType}` });
        else if (D) ops.op(mmcModule, bindingList(KERNELS.attn_mmc, { ...D, P, ML, PARAMS }), pushWords(KERNELS.attn_mmc, { ...push, kScales: L.kScales, vLo: L.vLo }), grid, true);
        else ops.op(mmcModule, bindingList(KERNELS.attn_tile, { QG, Kc, Vc, P, ML, PARAMS }), pushWords(KERNELS.attn_tile, push), grid, true);
      };
      const runs = (['attn_tile', 'attn_mmc'] as const).map((kernel) => {
        // slots a kernel leaves unwritten (blocks past a token) read as 0 in both runs, not as garbage
        dev.write(ML, 0, new Uint8Array(T * nHead * nBlk * 8));
        const ops = new OpList(pipes);
        if (kernel === 'attn_mmc' && D) decode(ops);
        attn(ops, kernel);
        dispatch(ops, KERNELS.attn_merge, { P, ML, QG, O, PARAMS }, { nHead, hd, nBlk, qStride, blk, t0: 0, grow: 0 }, [T, nHead]);
        const cmd = dev.record(ops.build(), false);
        dev.runSync(cmd);
        dev.freeCommand(cmd);
        return { o: new Float32Array(dev.read(O, 0, T * nHead * hd * 4)), ml: new Float32Array(dev.read(ML, 0, T * nHead * nBlk * 8)) };
      });
      // the softmax statistics (each block's running max and sum) apart: they tell a wrong S from a wrong P·V
      let mlDiff = 0;
      for (let i = 0; i < runs[0].ml.length; i++) if (runs[0].ml[i] !== 0 || runs[1].ml[i] !== 0) mlDiff = Math.max(mlDiff, Math.abs(runs[0].ml[i] - runs[1].ml[i]) / Math.max(1, Math.abs(runs[0].ml[i])));
      const outs = runs.map((r) => r.o);
      const nans = outs[1].filter((x) => Number.isNaN(x)).length;
      let m = 0, big = 0;
      for (let i = 0; i < outs[0].length; i++) {
        big = Math.max(big, Math.abs(outs[0][i]));
        const e = Math.abs(outs[0][i] - outs[1][i]);
        if (!(e <= m)) m = e;
      }
      const rel = m / big;
      worst = Math.max(worst, Number.isNaN(rel) ? Infinity : rel);
      const t = (['attn_tile', 'attn_mmc'] as const).map((k) => gpuTime({ dev, pipes, reps, warmMs: 200 }, (ops) => attn(ops, k)).seconds * 1e6);
      console.log(`${nHead}/${nHeadKv},${hd},${T},${pos},${rel.toExponential(2)},${mlDiff.toExponential(2)},${nans},${t[0].toFixed(1)},${t[1].toFixed(1)},${(t[0] / t[1]).toFixed(2)}`);
      for (const b of [Kc, Vc, QG, P, ML, O, PARAMS, ...(D ? [D.QD, D.KD, D.VD] : [])]) dev.freeBuffer(b);
    }
  }
}
dev.dispose();
// one f16 rounding of an operand is ~5e-4; the two-f16 form stays near f32's sums
const LIMIT = 1e-5;
console.log(worst <= LIMIT ? `ok: every output within ${LIMIT} of attn_tile's (relative to the largest)` : `FAIL: ${worst.toExponential(2)} > ${LIMIT}`);
process.exit(worst <= LIMIT ? 0 : 1);
