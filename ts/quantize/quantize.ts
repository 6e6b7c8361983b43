/**
 * q36-quantize's work: reads a qwen35moe GGUF tensor by tensor, quantizes each as planned
 * (plan.ts) on worker threads and streams the result to a fresh OUT.<random>.tmp (safe-file.ts), renamed to OUT only when all of
 * it is written. Memory stays bounded by a few row jobs per thread; on any error (including a full
 * disk) the partial file is removed.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { ggufHeader, kv, readGguf, readTensorBytes, rowBytes, typeName, type GgufValue } from '../gguf/index.js';
import { importanceWeights, readImatrix } from './imatrix-file.js';
import { FILE_TYPE_Q8_0, planTensors, type PlanOptions, type Recipe, type TensorPlan, type TypeOverride } from './plan.js';
import { RowPool } from './pool.js';
import { createTemp, writeAll } from '../safe-file.js';

export interface QuantizeOptions {
  input: string;
  output: string;
  recipe: Recipe;
  imatrix?: string;
  overrides?: TypeOverride[];
  q4Layers?: [number, number];
  threads?: number;
  onProgress?: (p: QuantizeProgress) => void;
}

export interface QuantizeProgress {
  tensor: number;
  tensors: number;
  name: string;
  bytesIn: number;
  totalIn: number;
}

export interface QuantizeSummary {
  tensors: number;
  quantized: number;
  bytesIn: number;
  bytesOut: number;
  seconds: number;
  threads: number;
  types: Record<string, number>;
}

/** Values per job: large enough to amortize a message, small enough to keep every thread busy. */
const JOB_VALUES = 1 << 20;
const COPY_CHUNK = 16 << 20;
const GGML_QNT_VERSION = 2;

function outputMetadata(src: Map<string, GgufValue>, o: QuantizeOptions, im: ReturnType<typeof readImatrix> | undefined): [string, GgufValue][] {
  // the input's keys in order, then what llama-quantize sets (gguf_set_* moves a key to the end)
  const meta: [string, GgufValue][] = [...src].filter(([k]) => k !== 'general.quantization_version' && k !== 'general.file_type' && !k.startsWith('quantize.imatrix.'));
  meta.push(['general.quantization_version', kv.u32(GGML_QNT_VERSION)]);
  meta.push(['general.file_type', kv.u32(FILE_TYPE_Q8_0)]);
  if (im && o.imatrix) {
    meta.push(['quantize.imatrix.file', kv.str(o.imatrix)]);
    if (im.datasets.length) meta.push(['quantize.imatrix.dataset', kv.str(im.datasets[0])]);
    meta.push(['quantize.imatrix.entries_count', kv.u32(im.entries.size)]);
    meta.push(['quantize.imatrix.chunks_count', kv.u32(im.chunkCount)]);
  }
  return meta;
}

export async function quantizeModel(o: QuantizeOptions): Promise<QuantizeSummary> {
  const t0 = Date.now();
  if (path.resolve(o.input) === path.resolve(o.output)) throw new Error('the output must not be the input file');
  const g = readGguf(o.input);
  const im = o.imatrix ? readImatrix(o.imatrix) : undefined;
  const planOpts: PlanOptions = { recipe: o.recipe, overrides: o.overrides, q4Layers: o.q4Layers, imatrix: im };
  const plans = planTensors(g, planOpts);
  const metadata = outputMetadata(g.metadata, o, im);
  const { header, sizes, alignment } = ggufHeader({ metadata, tensors: plans.map((p) => ({ name: p.src.name, shape: p.shape, type: p.type })), alignment: g.alignment });
  const totalIn = plans.reduce((a, p) => a + p.src.nbytes, 0);
  const pool = new RowPool(o.threads ?? 1);
  let tmp = '';
  const inFd = fs.openSync(o.input, 'r');
  let outFd = -1;
  let pos = 0;
  const put = (b: Uint8Array) => {
    writeAll(outFd, b, pos);
    pos += b.byteLength;
  };
  const types: Record<string, number> = {};
  let bytesIn = 0, quantized = 0;
  try {
    ({ fd: outFd, tmp } = createTemp(o.output));
    put(header);
    const zeros = new Uint8Array(alignment);
    for (let i = 0; i < plans.length; i++) {
      const p = plans[i];
      o.onProgress?.({ tensor: i, tensors: plans.length, name: p.src.name, bytesIn, totalIn });
      const start = pos;
      if (p.copy) {
        for (let at = 0; at < p.src.nbytes; at += COPY_CHUNK) {
          const n = Math.min(COPY_CHUNK, p.src.nbytes - at);
          const b = new Uint8Array(n);
          readTensorBytes(inFd, p.src, b, at, n);
          put(b);
        }
      } else {
        await quantizeTensor(p, inFd, im ? (p.imatrixName ? importanceWeights(im.entries.get(p.imatrixName)!) : null) : null, pool, put);
        quantized++;
      }
      if (pos - start !== sizes[i]) throw new Error(`${p.src.name}: wrote ${pos - start} bytes, expected ${sizes[i]}`);
      const pad = (alignment - (sizes[i] % alignment)) % alignment;
      if (pad) put(zeros.subarray(0, pad));
      bytesIn += p.src.nbytes;
      types[typeName(p.type)] = (types[typeName(p.type)] ?? 0) + 1;
    }
    o.onProgress?.({ tensor: plans.length, tensors: plans.length, name: '', bytesIn, totalIn });
    fs.fsyncSync(outFd);
    fs.closeSync(outFd);
    outFd = -1;
    fs.renameSync(tmp, o.output);
  } catch (e) {
    if (outFd >= 0) fs.closeSync(outFd);
    if (tmp) fs.rmSync(tmp, { force: true });
    const err = e as NodeJS.ErrnoException;
    if (err.code === 'ENOSPC') throw new Error(`disk full writing ${o.output} (${pos} bytes written, removed)`);
    throw e;
  } finally {
    fs.closeSync(inFd);
    await pool.close();
  }
  return { tensors: plans.length, quantized, bytesIn, bytesOut: pos, seconds: (Date.now() - t0) / 1000, threads: pool.threads, types };
}

/** Row jobs of one tensor, at most 2 per thread in flight, written in order. */
async function quantizeTensor(p: TensorPlan, fd: number, weights: Float32Array | null, pool: RowPool, put: (b: Uint8Array) => void): Promise<void> {
  const t = p.src;
  const rowsPerSlice = t.rows / p.slices;
  const perJob = Math.max(1, Math.min(rowsPerSlice, Math.floor(JOB_VALUES / t.rowElems)));
  const outRow = rowBytes(p.type, t.rowElems);
  const inFlight: Promise<Uint8Array>[] = [];
  const limit = 2 * pool.threads;
  try {
  for (let slice = 0; slice < p.slices; slice++) {
    const qw = weights ? weights.slice(slice * t.rowElems, (slice + 1) * t.rowElems) : null;
    for (let r = 0; r < rowsPerSlice; r += perJob) {
      const rows = Math.min(perJob, rowsPerSlice - r);
      const src = new Uint8Array(rows * t.rowBytes);
      readTensorBytes(fd, t, src, (slice * rowsPerSlice + r) * t.rowBytes, src.byteLength);
      inFlight.push(pool.run({ srcType: t.type, dstType: p.type, rowElems: t.rowElems, rows, src, qw }, outRow));
      if (inFlight.length >= limit) put(await inFlight.shift()!);
    }
  }
  while (inFlight.length) put(await inFlight.shift()!);
  } finally {
    for (const j of inFlight) j.catch(() => {}); // after a failure: the rest are dropped, not unhandled
  }
}

