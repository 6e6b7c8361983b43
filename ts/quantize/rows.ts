/**
 * What the native quantizer reads and writes, row by row: input rows (BF16, F16, F32, Q8_0) to
 * f32 the way ggml converts them, and f32 rows to each output type it can produce.
 */
import { GgmlType, typeName } from '../gguf/index.js';
import { QuantKernels } from '../core/quant.js';
import { f32ToBf16, f32ToF16 } from '../model/f16.js';
import { quantizeIQ2XXS } from './iq2xxs.js';
import { quantizeQ2K, quantizeQ4K, quantizeQ8_0 } from './kquants.js';

/** Input tensor types (2-D weights); anything else is refused naming the tensor. */
export const INPUT_TYPES: readonly GgmlType[] = [GgmlType.BF16, GgmlType.F16, GgmlType.F32, GgmlType.Q8_0];

/** Output types this quantizer writes (all of them the engine reads). */
export const OUTPUT_TYPES: readonly GgmlType[] = [
  GgmlType.F32, GgmlType.F16, GgmlType.BF16, GgmlType.Q8_0, GgmlType.Q4_K, GgmlType.Q2_K, GgmlType.IQ2_XXS,
];

/** Types whose quantizer needs an importance matrix (llama.cpp refuses them without one too). */
export function needsImatrix(t: GgmlType): boolean {
  return t === GgmlType.IQ2_XXS;
}

/** Types that use the importance matrix when there is one (Q8_0 and the float types ignore it). */
export function usesImatrix(t: GgmlType): boolean {
  return t === GgmlType.IQ2_XXS || t === GgmlType.Q2_K || t === GgmlType.Q4_K;
}

/**
 * Input rows as f32: the engine's own decoders (bit-exact against the quant oracle), which compute
 * what ggml's to_float does for these types (Q8_0: q·d in f32). One WASM core per thread.
 */
let kernels: QuantKernels | undefined;
function toF32(type: GgmlType, src: Uint8Array, n: number): Float32Array {
  if (!INPUT_TYPES.includes(type)) throw new Error(`cannot read ${typeName(type)} input rows`);
  return (kernels ??= new QuantKernels()).dequantize(type, src, n);
}

/** Quantizes one row `x` into `out` (exactly one row's bytes); `qw` = its importance weights or null. */
export function quantizeRow(type: GgmlType, x: Float32Array, out: Uint8Array, qw: Float32Array | null): void {
  const dv = new DataView(out.buffer, out.byteOffset, out.byteLength);
  switch (type) {
    case GgmlType.F32: for (let i = 0; i < x.length; i++) dv.setFloat32(4 * i, x[i], true); return;
    case GgmlType.F16: for (let i = 0; i < x.length; i++) dv.setUint16(2 * i, f32ToF16(x[i]), true); return;
    case GgmlType.BF16: for (let i = 0; i < x.length; i++) dv.setUint16(2 * i, f32ToBf16(x[i]), true); return;
    case GgmlType.Q8_0: quantizeQ8_0(x, out); return;
    case GgmlType.Q2_K: quantizeQ2K(x, out, qw); return;
    case GgmlType.Q4_K: quantizeQ4K(x, out, qw); return;
    case GgmlType.IQ2_XXS:
      if (!qw) throw new Error('IQ2_XXS needs importance weights');
      quantizeIQ2XXS(x, out, qw);
      return;
    default:
      throw new Error(`q36-quantize cannot write ${typeName(type)}`);
  }
}

/** One unit of work: `rows` rows of one tensor (all in one expert slice), raw input bytes in. */
export interface RowJob {
  srcType: GgmlType;
  dstType: GgmlType;
  rowElems: number;
  rows: number;
  src: Uint8Array;
  /** importance weights for these rows (one row's worth: rows of one expert share it), or null */
  qw: Float32Array | null;
}

export function runJob(j: RowJob, dstRowBytes: number): Uint8Array {
  const out = new Uint8Array(dstRowBytes * j.rows);
  const x = toF32(j.srcType, j.src, j.rowElems * j.rows);
  for (let r = 0; r < j.rows; r++) {
    quantizeRow(j.dstType, x.subarray(r * j.rowElems, (r + 1) * j.rowElems), out.subarray(r * dstRowBytes, (r + 1) * dstRowBytes), j.qw);
  }
  return out;
}
