/**
 * bench-matvec-bw: achieved memory bandwidth of the decode matvec kernels on the real decode shapes,
 * per weight type, as a fraction of the device's copy bandwidth measured in the same run (#17:
 * bandwidth-bound boards get exactly what these kernels achieve). GPU time from timestamps, the
 * median of --reps runs; bytes = the weight bytes read (activations and outputs are < 0.1% here).
 *
 *   node dist/scripts/bench-matvec-bw.js [--vk-device N] [--reps 20] [--scale 1] [--types q8_0,q2_k,...] [--batch 1,2,4,8]
 *   (--scale 0.01 shrinks every shape for a quick run on lavapipe)
 */
import { parseArgs } from 'node:util';
import { Core } from '../ts/core/wasm.js';
import { OpList, Pipelines, gridBlob, matvecOp } from '../ts/engine/vulkan/graph.js';
import { KERNELS, dispatch } from '../ts/engine/vulkan/kernels.js';
import { GgmlType, rowBytes, typeName } from '../ts/gguf/index.js';
import { Rng, fillRandom } from '../ts/model/synth.js';
import { loadAddon } from '../ts/vk/addon.js';
import { median } from './lib/stats.js';

const a = parseArgs({ options: {
  'vk-device': { type: 'string', default: '-1' }, reps: { type: 'string', default: '20' }, scale: { type: 'string', default: '1' },
  types: { type: 'string', default: 'q8_0,q2_k,iq2_xxs,q4_k,q5_k,q6_k,f16,bf16' },
  // activation rows of the dense shapes: 1 = decode; 2, 4, 8 = a batched decode step's matmuls
  batch: { type: 'string', default: '1' },
} }).values;
const reps = Number(a.reps), scale = Number(a.scale);
const dev = new (loadAddon().Device)(Number(a['vk-device']));
const pipes = new Pipelines(dev);
const grid = (() => { const g = gridBlob(new Core()); const b = dev.createBuffer(g.byteLength, false); dev.write(b, 0, g); return b; })();
const round = (n: number, m: number) => Math.max(m, Math.round(n / m) * m);
/** bytes of weight copies the reps cycle through (well past the largest L2) */
const COLD_BYTES = Math.round(512 * 2 ** 20 * Math.min(1, scale * 10));
const maxRange = dev.info().maxStorageBufferRange;

/** The full model's decode shapes (rows × columns; experts: 8 routed of 512 rows each). */
const SHAPES = [
  { what: 'LM head', rows: round(248320 * scale, 64), n: 2048, experts: 0 },
  { what: 'DeltaNet in-projection (stacked)', rows: round(12352 * scale, 64), n: 2048, experts: 0 },
  { what: 'out-projection', rows: round(2048 * scale, 64), n: 4096, experts: 0 },
  { what: 'routed experts', rows: round(512 * scale, 64), n: 2048, experts: 8 },
];

/**
 * GPU seconds of one dispatch: `reps` copies recorded back to back in one command (a barrier
 * after each, so they do not overlap), each timed by timestamps; the median. One command keeps
 * the GPU busy the way a decode step does: dispatches run one at a time with the host waiting in
 * between leave the clocks low (the first H200 run of this script, 2026-12-01 15:42, did that:
 * SM clock 345 MHz after it, kernels 2-5× slower than inside a decode step).
 */
const WARM_MS = 400;
function time(build: (ops: OpList, rep: number) => void): number {
  const ops = new OpList(pipes);
  for (let i = 0; i < reps; i++) build(ops, i);
  const cmd = dev.record(ops.build(), true);
  // warm-up: first touch, and clocks: the host filling a type's weights leaves the GPU idle for
  // seconds, and two runs of a few ms were still ramping (the K-quant LM heads, 2026-12-01 23:11,
  // 5-15× slower than Q8_0's per weight, about the 345 MHz / 1980 MHz of an idle H200)
  const t0 = performance.now();
  do dev.runSync(cmd); while (performance.now() - t0 < WARM_MS);
  dev.runSync(cmd);
  const t = Array.from(dev.timings(cmd), (ns) => ns / 1e9);
  dev.freeCommand(cmd);
  return median(t);
}

// copy bandwidth: 1 GiB (scaled) read + written
const copyBytes = round(2 ** 30 * Math.min(1, scale * 10), 4096);
const src = dev.createBuffer(copyBytes, false), dst = dev.createBuffer(copyBytes, false);
const copyS = time((ops) => dispatch(ops, KERNELS.copy, { SRC: src, DST: dst }, { n4: copyBytes / 16 }, [Math.min(65535, Math.ceil(copyBytes / 16 / 256))]));
const copyBw = (2 * copyBytes) / copyS;
dev.freeBuffer(src); dev.freeBuffer(dst);
console.log(`# bench-matvec-bw ${new Date().toISOString()} reps ${reps} scale ${scale}; ${dev.info().name}; weights cycle through ≥ ${(COLD_BYTES / 2 ** 20).toFixed(0)} MiB of copies (cold in L2)`);
console.log(`copy: ${(copyBytes / 2 ** 20).toFixed(0)} MiB read + written in ${(copyS * 1e3).toFixed(3)} ms = ${(copyBw / 1e9).toFixed(1)} GB/s`);
console.log('type,shape,activation_rows,weight_bytes,us,GB/s,fraction_of_copy');
const batches = a.batch!.split(',').map(Number);

const NAMES: Record<string, GgmlType> = { q8_0: GgmlType.Q8_0, q2_k: GgmlType.Q2_K, iq2_xxs: GgmlType.IQ2_XXS, q4_k: GgmlType.Q4_K, q5_k: GgmlType.Q5_K, q6_k: GgmlType.Q6_K, f16: GgmlType.F16, bf16: GgmlType.BF16 };
const rng = new Rng(1);
for (const name of a.types!.split(',')) {
  const type = NAMES[name];
  if (type === undefined) { console.error(`bench-matvec-bw: unknown type "${name}"`); process.exit(2); }
  for (const sh of SHAPES) {
    const rb = rowBytes(type, sh.n), nExp = sh.experts || 1;
    const wBytes = rb * sh.rows * nExp;
    // consecutive reps read different copies of the weight (≥ COLD_BYTES in all), so each comes
    // from memory as in a decode step, not from the last rep's L2 (50 MB on the H200: the
    // 12-50 MB matrices fit)
    const copies = Math.max(1, Math.min(Math.ceil(COLD_BYTES / wBytes), Math.floor(maxRange / wBytes)));
    // blocks as the synthetic model makes them (fillRandom: finite scales, values of RMS 0.02),
    // not random bytes: those gave f16 scales that are NaN, Inf or subnormal, one suspect for the
    // isolated numbers disagreeing with the in-step ones (docs/vulkan.md, "Per-kernel bandwidth")
    const w = dev.createBuffer(wBytes * copies, false);
    const chunkRows = Math.max(1, Math.floor(Math.min(wBytes * copies, 64 << 20) / rb));
    const chunk = new Uint8Array(chunkRows * rb);
    fillRandom(type, chunk, chunkRows * sh.n, rng, { sigma: 0.02 });
    for (let o = 0; o < wBytes * copies; o += chunk.length) dev.write(w, o, chunk.subarray(0, Math.min(chunk.length, wBytes * copies - o)));
    const at = (rep: number) => (rep % copies) * wBytes;
    const maxB = Math.max(...batches);
    const x = dev.createBuffer(sh.n * 4 * maxB, false), y = dev.createBuffer(sh.rows * nExp * 4 * maxB, false), ids = dev.createBuffer(64, false);
    dev.write(x, 0, new Uint8Array(new Float32Array(sh.n * maxB).fill(0.01).buffer));
    dev.write(ids, 0, new Uint8Array(Uint32Array.from({ length: 16 }, (_, i) => i % 8).buffer));
    // routed experts: the decode gather (one activation row per expert); dense: each batch size
    for (const nb of sh.experts ? [1] : batches) {
      const o = { type: name, rowBytes: rb };
      const s = time((ops, rep) => matvecOp(ops, sh.experts
        ? { ...o, buffers: [w, x, y, ids, grid], rows: sh.rows, n: sh.n, nRows: sh.experts, flags: 1 | 2, K: sh.experts, expertBytes: rb * sh.rows, xStride: 0, wOffset: at(rep) }
        : { ...o, buffers: [w, x, y, ids, grid], rows: sh.rows, n: sh.n, nRows: nb, wOffset: at(rep) }));
      const bw = wBytes / s;
      console.log(`${typeName(type)},${sh.what} ${sh.experts ? `${sh.experts} × ` : ''}${sh.rows} × ${sh.n},${sh.experts || nb},${wBytes},${(s * 1e6).toFixed(1)},${(bw / 1e9).toFixed(1)},${(bw / copyBw).toFixed(3)}`);
    }
    [w, x, y, ids].forEach((b) => dev.freeBuffer(b));
  }
}
dev.dispose();
