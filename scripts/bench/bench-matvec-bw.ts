/**
 * bench-matvec-bw: achieved memory bandwidth of the decode matvec kernels on the real decode shapes,
 * per weight type, as a fraction of the device's copy bandwidth measured in the same run (#17:
 * bandwidth-bound boards get exactly what these kernels achieve). GPU time from timestamps, the
 * median of --reps runs; bytes = the weight bytes read (activations and outputs are < 0.1% here).
 *
 *   node dist/scripts/bench/bench-matvec-bw.js [--vk-device N] [--reps 20] [--scale 1] [--types q8_0,q2_k,...] [--batch 1,2,4,8]
 *     [--kernels matvec,mv] [--pairs 8,64] [--stats]
 *   (--scale 0.01 shrinks every shape for a quick run on lavapipe; --kernels: the one-activation-row
 *   kernels to time, matvec.comp and/or mv.comp; --pairs: the (token, expert) pairs of the routed
 *   gate+up and down shapes, 8 = one decode token, 64 = a batched step of 8 rows; --stats prints
 *   the driver's compiler statistics, such as registers, of every kernel timed)
 */
import { parseArgs } from 'node:util';
import { Core } from '../../ts/core/wasm.js';
import { MV, OpList, Pipelines, gridBlob, matvecOp } from '../../ts/engine/vulkan/graph.js';
import { KERNELS, dispatch } from '../../ts/engine/vulkan/kernels.js';
import { GgmlType, rowBytes, typeName } from '../../ts/gguf/index.js';
import { Rng, fillRandom } from '../../ts/model/synth.js';
import { loadAddon } from '../../ts/vk/addon.js';
import { gpuTime } from '../lib/gpu-time.js';
import { pipelineStats } from '../lib/pipeline-stats.js';

const a = parseArgs({ options: {
  'vk-device': { type: 'string', default: '-1' }, reps: { type: 'string', default: '20' }, scale: { type: 'string', default: '1' },
  types: { type: 'string', default: 'q8_0,q2_k,iq2_xxs,q4_k,q5_k,q6_k,f16,bf16' },
  // activation rows of the dense shapes: 1 = decode; 2, 4, 8 = a batched decode step's matmuls
  batch: { type: 'string', default: '1' },
  kernels: { type: 'string', default: 'matvec' }, pairs: { type: 'string', default: '8' }, stats: { type: 'boolean', default: false },
} }).values;
const reps = Number(a.reps), scale = Number(a.scale);
const dev = new (loadAddon().Device)(Number(a['vk-device']));
const pipes = new Pipelines(dev);
const grid = (() => { const g = gridBlob(new Core()); const b = dev.createBuffer(g.byteLength, false); dev.write(b, 0, g); return b; })();
const round = (n: number, m: number) => Math.max(m, Math.round(n / m) * m);
/** bytes of weight copies the reps cycle through (well past the largest L2) */
const COLD_BYTES = Math.round(512 * 2 ** 20 * Math.min(1, scale * 10));
const maxRange = dev.info().maxStorageBufferRange;

/**
 * The full model's decode shapes (rows × columns; experts: 8 routed of 512 rows each, the old
 * shape, one activation row shared; pairs: the routed gate+up as one GLU weight [gate; up] per
 * expert and the down projection, over --pairs (token, expert) pairs of distinct experts out of
 * the model's 256, as a decode step or a batched step runs them).
 */
interface Shape { what: string; rows: number; n: number; experts: number; pairs?: number; glu?: boolean; nExpert?: number }
const SHAPES: Shape[] = [
  { what: 'LM head', rows: round(248320 * scale, 64), n: 2048, experts: 0 },
  { what: 'DeltaNet in-projection (stacked)', rows: round(12352 * scale, 64), n: 2048, experts: 0 },
  { what: 'out-projection', rows: round(2048 * scale, 64), n: 4096, experts: 0 },
  { what: 'routed experts', rows: round(512 * scale, 64), n: 2048, experts: 8 },
  ...a.pairs!.split(',').map(Number).flatMap((p) => [
    { what: 'routed gate+up (GLU)', rows: round(512 * scale, 8), n: 2048, experts: 0, pairs: p, glu: true, nExpert: 256 },
    { what: 'routed down', rows: round(2048 * scale, 64), n: 512, experts: 0, pairs: p, nExpert: 256 },
  ]),
];
const kernels = a.kernels!.split(',');
for (const k of kernels) if (k !== 'matvec' && k !== 'mv') { console.error(`bench-matvec-bw: unknown kernel "${k}" (matvec, mv)`); process.exit(2); }
const used = new Set<string>();

// bench-matvec-bw's warm-up (lib/gpu-time.ts says why)
const WARM_MS = 400;
function time(build: (ops: OpList, rep: number) => void): number {
  const r = gpuTime({ dev, pipes, reps, warmMs: WARM_MS }, build);
  r.names.forEach((n) => used.add(n));
  return r.seconds;
}

// copy bandwidth: 1 GiB (scaled) read + written
const copyBytes = round(2 ** 30 * Math.min(1, scale * 10), 4096);
const src = dev.createBuffer(copyBytes, false), dst = dev.createBuffer(copyBytes, false);
const copyS = time((ops) => dispatch(ops, KERNELS.copy, { SRC: src, DST: dst }, { n4: copyBytes / 16 }, [Math.min(65535, Math.ceil(copyBytes / 16 / 256))]));
const copyBw = (2 * copyBytes) / copyS;
dev.freeBuffer(src); dev.freeBuffer(dst);
console.log(`# bench-matvec-bw ${new Date().toISOString()} reps ${reps} scale ${scale}; ${dev.info().name}; weights cycle through ≥ ${(COLD_BYTES / 2 ** 20).toFixed(0)} MiB of copies (cold in L2)`);
console.log(`copy: ${(copyBytes / 2 ** 20).toFixed(0)} MiB read + written in ${(copyS * 1e3).toFixed(3)} ms = ${(copyBw / 1e9).toFixed(1)} GB/s`);
console.log('type,shape,activation_rows,kernel,weight_bytes,us,GB/s,fraction_of_copy');
const batches = a.batch!.split(',').map(Number);

const NAMES: Record<string, GgmlType> = { q8_0: GgmlType.Q8_0, q2_k: GgmlType.Q2_K, iq2_xxs: GgmlType.IQ2_XXS, q4_k: GgmlType.Q4_K, q5_k: GgmlType.Q5_K, q6_k: GgmlType.Q6_K, f16: GgmlType.F16, bf16: GgmlType.BF16 };
const rng = new Rng(1);
for (const name of a.types!.split(',')) {
  const type = NAMES[name];
  if (type === undefined) { console.error(`bench-matvec-bw: unknown type "${name}"`); process.exit(2); }
  for (const sh of SHAPES) {
    const rb = rowBytes(type, sh.n), nExp = sh.nExpert ?? (sh.experts || 1);
    // a GLU expert is [gate rows; up rows]
    const expertBytes = rb * sh.rows * (sh.glu ? 2 : 1);
    const wBytes = expertBytes * nExp;
    // consecutive reps read different copies of the weight (≥ COLD_BYTES in all), so each comes
    // from memory as in a decode step, not from the last rep's L2 (50 MB on the H200: the
    // 12-50 MB matrices fit)
    const copies = Math.max(1, Math.min(Math.ceil(COLD_BYTES / wBytes), Math.floor(maxRange / wBytes)));
    // blocks as the synthetic model makes them (fillRandom: finite scales, values of RMS 0.02),
    // not random bytes: those gave f16 scales that are NaN, Inf or subnormal, one suspect for the
    // isolated numbers disagreeing with the in-step ones (docs/journal/vulkan-speed-2026-11-29-to-12-03.md, "Per-kernel bandwidth")
    const w = dev.createBuffer(wBytes * copies, false);
    const chunkRows = Math.max(1, Math.floor(Math.min(wBytes * copies, 64 << 20) / rb));
    const chunk = new Uint8Array(chunkRows * rb);
    fillRandom(type, chunk, chunkRows * sh.n, rng, { sigma: 0.02 });
    for (let o = 0; o < wBytes * copies; o += chunk.length) dev.write(w, o, chunk.subarray(0, Math.min(chunk.length, wBytes * copies - o)));
    const at = (rep: number) => (rep % copies) * wBytes;
    const maxB = Math.max(...batches), pairs = sh.pairs ?? 0;
    const xRows = Math.max(maxB, pairs);
    const x = dev.createBuffer(sh.n * 4 * xRows, false), y = dev.createBuffer(sh.rows * Math.max(nExp, pairs) * 4 * maxB, false), ids = dev.createBuffer(4 * Math.max(16, pairs), false);
    dev.write(x, 0, new Uint8Array(new Float32Array(sh.n * xRows).fill(0.01).buffer));
    // pairs: distinct experts spread over the model's (a batched step's 64 pairs name ~57 distinct ones)
    const idv = pairs ? Uint32Array.from({ length: pairs }, (_, i) => (i * 37) % nExp) : Uint32Array.from({ length: 16 }, (_, i) => i % 8);
    dev.write(ids, 0, new Uint8Array(idv.buffer));
    const o = { type: name, rowBytes: rb };
    const runs: { label: string; rows: number; d: (rep: number, k: string) => Parameters<typeof matvecOp>[1] }[] = pairs
      ? [{ label: `${sh.what} ${pairs} pairs × ${sh.rows} × ${sh.n}`, rows: pairs, d: (rep, k) => ({ ...o, buffers: [w, x, y, ids, grid], rows: sh.rows, n: sh.n, nRows: pairs, flags: MV.gather | MV.ownRow | (sh.glu ? MV.glu : 0), K: 8, expertBytes, upBytes: sh.glu ? rb * sh.rows : 0, wOffset: at(rep), unit: k === 'mv' }) }]
      : sh.experts
        ? [{ label: `${sh.what} ${sh.experts} × ${sh.rows} × ${sh.n}`, rows: sh.experts, d: (rep, k) => ({ ...o, buffers: [w, x, y, ids, grid], rows: sh.rows, n: sh.n, nRows: sh.experts, flags: MV.gather | MV.ownRow, K: sh.experts, expertBytes: rb * sh.rows, xStride: 0, wOffset: at(rep), unit: k === 'mv' }) }]
        : batches.map((nb) => ({ label: `${sh.what} ${sh.rows} × ${sh.n}`, rows: nb, d: (rep: number, k: string) => ({ ...o, buffers: [w, x, y, ids, grid] as [number, number, number, number, number], rows: sh.rows, n: sh.n, nRows: nb, wOffset: at(rep), unit: k === 'mv' }) }));
    // bytes a step reads: the pairs' experts (each distinct here), else the whole weight
    const readBytes = pairs ? expertBytes * Math.min(pairs, nExp) : wBytes;
    for (const r of runs) {
      for (const k of kernels) {
        // mv: one activation row (or pairs); the dense shapes' batches run the matmuls
        if (k === 'mv' && r.rows > 1 && !pairs && !sh.experts) continue;
        const s = time((ops, rep) => matvecOp(ops, r.d(rep, k)));
        const bw = readBytes / s;
        console.log(`${typeName(type)},${r.label},${r.rows},${k},${readBytes},${(s * 1e6).toFixed(1)},${(bw / 1e9).toFixed(1)},${(bw / copyBw).toFixed(3)}`);
      }
    }
    [w, x, y, ids].forEach((b) => dev.freeBuffer(b));
  }
}
if (a.stats) {
  // the driver's compiler statistics of every kernel timed (registers bound occupancy)
  for (const name of [...used].map((n) => n.split(' ')[0]).filter((n, i, all) => all.indexOf(n) === i)) {
    console.log(`stats ${name}: ${pipelineStats(dev, name).text}`);
  }
}
dev.dispose();
