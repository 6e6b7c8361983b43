/**
 * bench-quant: GB/s of weights consumed by the WASM matvec, per type, SIMD kernels vs the scalar
 * reference path, on this machine (one core). Weights are random valid blocks (oracle blocks tiled).
 *
 *   node dist/scripts/bench/bench-quant.js [--rows 4096] [--n 4096] [--seconds 0.5]
 */
import { readQuantOracle } from '../lib/quant-oracle.js';
import * as os from 'node:os';
import * as path from 'node:path';
import { parseArgs } from 'node:util';
import { ALL_TYPES, rowBytes } from '../../ts/gguf/index.js';
import { QuantKernels } from '../../ts/core/quant.js';
import { ROOT } from '../../ts/paths.js';
import { Rng } from '../../ts/model/synth.js';

const { values: a } = parseArgs({ options: { rows: { type: 'string', default: '4096' }, n: { type: 'string', default: '4096' }, seconds: { type: 'string', default: '0.5' }, types: { type: 'string' } } });
const rows = Number(a.rows), n = Number(a.n), seconds = Number(a.seconds);

function matrix(t: number, rng: Rng): Uint8Array {
  const name = ALL_TYPES.find((x) => x.id === t)!.name.toLowerCase();
  const q = readQuantOracle(path.join(ROOT, 'fixtures', 'quant', `${name}.bin`));
  const total = rowBytes(t, n) * rows;
  const out = new Uint8Array(total);
  for (let o = 0; o < total; o += q.bytes) out.set(q.block(rng.int(0, q.nBlocks - 1)), o);
  return out;
}

function measure(run: () => void, bytes: number): number {
  run(); // warm-up
  let iters = 0;
  const t0 = process.hrtime.bigint();
  let el = 0;
  do { run(); iters++; el = Number(process.hrtime.bigint() - t0) / 1e9; } while (el < seconds);
  return (bytes * iters) / el / 1e9;
}

const q = new QuantKernels();
const rng = new Rng(1);
console.log(`# bench-quant: matvec ${rows} × ${n}, one core, ${os.cpus()[0].model}, node ${process.version}, ${new Date().toISOString().slice(0, 10)}`);
console.log('| type | bits/weight | SIMD GB/s | scalar GB/s | speed-up | SIMD Gweights/s |');
console.log('|---|---:|---:|---:|---:|---:|');
const only = a.types?.toUpperCase().split(',');
for (const ti of ALL_TYPES.filter((t) => t.supported && (!only || only.includes(t.name)))) {
  const w = matrix(ti.id, rng);
  const simd = measure(q.matvecBench(ti.id, w, rows, n, false), w.byteLength);
  const scalar = measure(q.matvecBench(ti.id, w, rows, n, true), w.byteLength);
  const bpw = (ti.blockBytes * 8) / ti.blockElems;
  console.log(`| ${ti.name} | ${bpw.toFixed(4)} | ${simd.toFixed(2)} | ${scalar.toFixed(2)} | ${(simd / scalar).toFixed(1)}× | ${((simd * 8) / bpw).toFixed(2)} |`);
}
