/**
 * TypeScript face of the WASM quant kernels: argument checking (block multiples, truncated data,
 * unsupported types) happens here so the WASM side can stay branch-free, and data is staged into
 * linear memory through one reusable region.
 */
import { rowBytes, typeInfo, typeName } from '../gguf/index.js';
import { Core } from './wasm.js';

interface QuantExports {
  dequantRow(t: number, src: number, dst: number, n: number): void;
  dot(t: number, w: number, x: number, n: number): number;
  dotScalarPath(t: number, w: number, x: number, n: number): number;
  matvec(t: number, w: number, rowBytes: number, rows: number, x: number, n: number, y: number): void;
  matvecScalar(t: number, w: number, rowBytes: number, rows: number, x: number, n: number, y: number): void;
  matmul(t: number, w: number, rowBytes: number, rows: number, x: number, n: number, nx: number, y: number, yStride: number): void;
  quantizeRow(t: number, src: number, dst: number, n: number): number;
}

/** Checks that `bytes` holds `rows` rows of n elements of type t; returns the row size. */
export function checkRows(t: number, n: number, rows: number, bytes: number, what = 'tensor'): number {
  const ti = typeInfo(t);
  if (!ti || !ti.supported) throw new Error(`${what}: type ${typeName(t)} is not supported by the quant core`);
  if (!Number.isInteger(n) || n <= 0) throw new Error(`${what}: row length ${n} must be a positive integer`);
  if (n % ti.blockElems !== 0) throw new Error(`${what}: row of ${n} elements is not a multiple of the ${ti.name} block (${ti.blockElems})`);
  const rb = rowBytes(t, n);
  if (bytes < rb * rows) throw new Error(`${what}: truncated ${ti.name} data: ${rows} row(s) of ${n} elements need ${rb * rows} bytes, got ${bytes}`);
  return rb;
}

export class QuantKernels {
  readonly core: Core;
  private k: QuantExports;
  private stage = 0;
  private stageSize = 0;

  constructor(core = new Core()) {
    this.core = core;
    this.k = core.x as unknown as QuantExports;
  }

  /** A staging region of at least `bytes` (reused; grows by reallocation). */
  private staging(bytes: number): number {
    if (bytes > this.stageSize) {
      this.stageSize = Math.max(bytes, this.stageSize * 2, 1 << 20);
      this.stage = this.core.alloc(this.stageSize);
    }
    return this.stage;
  }

  /** Decodes n elements of type t. */
  dequantize(t: number, data: Uint8Array, n: number): Float32Array {
    const out = new Float32Array(n);
    this.dequantizeInto(t, data, out);
    return out;
  }

  /** Decodes dst.length elements of type t into dst (no allocation: a step's embedding rows). */
  dequantizeInto(t: number, data: Uint8Array, dst: Float32Array): void {
    const n = dst.length;
    const rb = checkRows(t, n, 1, data.byteLength, 'dequantize');
    const p = this.staging(rb + n * 4 + 64);
    const out = p + Math.ceil(rb / 64) * 64;
    this.core.u8(p, rb).set(data.subarray(0, rb));
    this.k.dequantRow(t, p, out, n);
    dst.set(this.core.f32(out, n));
  }

  /** W[row]·x with f32 accumulation; `scalar` forces the decode-then-dot reference path. */
  dot(t: number, w: Uint8Array, x: Float32Array, scalar = false): number {
    const n = x.length;
    const rb = checkRows(t, n, 1, w.byteLength, 'dot');
    const p = this.staging(rb + n * 4 + 128);
    const xp = p + Math.ceil(rb / 64) * 64;
    this.core.u8(p, rb).set(w.subarray(0, rb));
    this.core.f32(xp, n).set(x);
    return scalar ? this.k.dotScalarPath(t, p, xp, n) : this.k.dot(t, p, xp, n);
  }

  /** y = W·x for a rows × n weight matrix; x may hold several activation rows (nx = x.length / n). */
  matmul(t: number, w: Uint8Array, rows: number, n: number, x: Float32Array): Float32Array {
    if (x.length % n !== 0) throw new Error(`matmul: activations (${x.length} floats) are not a whole number of rows of ${n}`);
    const nx = x.length / n;
    const rb = checkRows(t, n, rows, w.byteLength, 'matmul');
    const wBytes = rb * rows;
    const p = this.staging(wBytes + x.length * 4 + nx * rows * 4 + 256);
    const xp = p + Math.ceil(wBytes / 64) * 64;
    const yp = xp + Math.ceil((x.length * 4) / 64) * 64;
    this.core.u8(p, wBytes).set(w.subarray(0, wBytes));
    this.core.f32(xp, x.length).set(x);
    this.k.matmul(t, p, rb, rows, xp, n, nx, yp, rows);
    return this.core.f32(yp, nx * rows).slice();
  }

  /**
   * Benchmark helper: stages a rows × n matrix once and returns a function running one matvec over
   * it (SIMD kernels, or the scalar reference path).
   */
  matvecBench(t: number, w: Uint8Array, rows: number, n: number, scalar: boolean): () => void {
    const rb = checkRows(t, n, rows, w.byteLength, 'matvec');
    const wp = this.core.alloc(rb * rows);
    const xp = this.core.alloc(n * 4);
    const yp = this.core.alloc(rows * 4);
    this.core.u8(wp, rb * rows).set(w.subarray(0, rb * rows));
    const x = this.core.f32(xp, n);
    for (let i = 0; i < n; i++) x[i] = Math.sin(i);
    const f = scalar ? this.k.matvecScalar : this.k.matvec;
    return () => f(t, wp, rb, rows, xp, n, yp);
  }

  /** Quantizes a KV-cache row: F32, F16, Q8_0 or Q4_0. */
  quantize(t: number, x: Float32Array): Uint8Array {
    const n = x.length;
    const ti = typeInfo(t);
    if (!ti || ![0, 1, 2, 8].includes(t)) throw new Error(`quantize: ${typeName(t)} is not a KV-cache type (f32, f16, q8_0, q4_0)`);
    const rb = checkRows(t, n, 1, Infinity, 'quantize');
    const p = this.staging(n * 4 + rb + 64);
    const out = p + Math.ceil((n * 4) / 64) * 64;
    this.core.f32(p, n).set(x);
    if (this.k.quantizeRow(t, p, out, n) !== 0) throw new Error(`quantize: ${typeName(t)} failed`);
    return this.core.u8(out, rb).slice();
  }
}
