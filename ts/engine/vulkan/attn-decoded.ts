/**
 * The prefill attention's operands on the matrix units, decoded once (shaders/attn_decode.comp)
 * and staged by attn_mmc: which layers take them, the three buffers' sizes, and the decode pass's
 * grid. One description for the step, the scratch table and the checks' harnesses.
 */
import type { KvType } from '../types.js';
import { KERNELS, dispatch, type BindOf, type OpSink } from './kernels.js';

/**
 * Query rows QD holds past a dispatch pair's: a workgroup's last 64-row block reads up to 63 rows
 * past its tokens (rows whose outputs are dropped).
 */
export const ATTN_DECODED_PAD_ROWS = 64;

/**
 * Prefill attention on the matrix units (attn_decode + attn_mmc) where the engine uses them and the
 * K cache's values are exact in f16 (f16, q8_0, q4_0); an f32 K keeps attn_tile.
 */
export function attnOnMatrixUnits(coopmat: boolean, k: KvType): boolean {
  return coopmat && k !== 'f32';
}

export interface AttnDecodedShape {
  nHead: number; nHeadKv: number; hd: number;
  /** tokens of one dispatch pair (QD holds one pair's Q) */
  tokens: number;
  /** keys the caches hold */
  ctx: number;
}

export interface AttnDecodedLayout {
  qBytes: number; kBytes: number; vBytes: number;
  /** word offsets of K's scales in KD and of V's lo halves in VD (attn_mmc's and attn_decode's push fields) */
  kScales: number; vLo: number;
}

/** QD: Q's hi then lo halves; KD: K's halves then its f32 scales (one per 32 dims); VD: V's hi then lo halves. */
export function attnDecodedLayout(s: AttnDecodedShape): AttnDecodedLayout {
  const kvDim = s.nHeadKv * s.hd, half = s.ctx * kvDim * 2;
  return {
    qBytes: 2 * (s.tokens * s.nHead + ATTN_DECODED_PAD_ROWS) * s.hd * 2,
    kBytes: half + s.ctx * (kvDim / 32) * 4, vBytes: 2 * half,
    kScales: half / 4, vLo: half / 4,
  };
}

/** attn_decode's workgroups (x, y) for `items` items of 4 elements (256 a workgroup, x within the 65535 every device allows). */
export function attnDecodeGrid(items: number): [number, number] {
  const groups = Math.max(1, Math.ceil(items / 256)), x = Math.min(groups, 65535);
  return [x, Math.ceil(groups / x)];
}

/** What one attention layer's decode passes need: the buffers, the shape, the caches' rows, the layout, the cache types' variant. */
export interface AttnDecodeArgs {
  bind: BindOf<typeof KERNELS.attn_decode>;
  nHead: number; nHeadKv: number; hd: number; qStride: number;
  kRowBytes: number; vRowBytes: number;
  /** keys the caches hold (the grid of part 0 covers them; keys past the step's last return at once) */
  ctx: number;
  layout: AttnDecodedLayout;
  /** the K and V cache types: `${k}_${v}` */
  variant: string;
}

/**
 * One decode pass: part 0 the K and V caches up to key PARAMS[0] + t0 + nTok − 1 (once a layer),
 * part 1 the Q of tokens t0 … t0 + nTok − 1 (once a dispatch pair).
 */
export function dispatchAttnDecode(ops: OpSink, a: AttnDecodeArgs, o: { part: 0 | 1; t0: number; nTok: number; barrier?: boolean }): void {
  const items = o.part === 0 ? a.ctx * a.nHeadKv * a.hd / 4 : o.nTok * a.nHead * a.hd / 4;
  dispatch(ops, KERNELS.attn_decode, a.bind, {
    nHead: a.nHead, nHeadKv: a.nHeadKv, hd: a.hd, kRowBytes: a.kRowBytes, vRowBytes: a.vRowBytes, qStride: a.qStride,
    nTok: o.nTok, t0: o.t0, kScales: a.layout.kScales, vLo: a.layout.vLo, part: o.part,
  }, attnDecodeGrid(items), { variant: a.variant, barrier: o.barrier });
}
