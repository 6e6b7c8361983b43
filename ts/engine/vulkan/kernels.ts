/**
 * Every compute shader's interface, declared once: its bindings (names, in binding order), its
 * push-constant block (field names in order; `:f32` marks floats, `_` padding), its workgroup
 * size and how many items one workgroup covers. The step (step.ts), the engine and the tests
 * build dispatches from these; the addon checks each pipeline against the interface its SPIR-V
 * module declares (reflected by scripts/build/build-shaders.mjs) when the pipeline is created, and
 * test/vulkan-kernels.test.ts checks every declaration against every variant.
 */

import { MAX_BATCH_ROWS } from '../defaults.js';

export interface KernelDecl<B extends string = string, P extends string = string> {
  /** shader base name (variants add a type suffix: matvec_q8_0, kv_store_f16, …) */
  name: string;
  bindings: readonly B[];
  push: readonly P[];
  /** local_size_x of the shader */
  local: number;
  /** items (elements, channels, rows, …) one workgroup covers along x, for groups() */
  per?: number;
  /**
   * The _rows kernels (shaders/rows.glsl): bindings that are arrays of ROW_ARRAY buffers, element
   * r row r's (its session's state or cache, its PARAMS row)
   */
  rows?: readonly B[];
}

/** Elements of a _rows kernel's per-row binding arrays: the most rows a batched step takes (shaders/variants.json BATCH, checked by test/vulkan-kernels.test.ts). */
export const ROW_ARRAY = MAX_BATCH_ROWS;

/** Buffers of each binding of the kernel (a per-row binding array ROW_ARRAY, else 1). */
export function bindingCounts(kd: KernelDecl): number[] {
  return kd.bindings.map((b) => (kd.rows?.includes(b) ? ROW_ARRAY : 1));
}

/** Buffers a dispatch of the kernel binds. */
export function descriptorCount(kd: KernelDecl): number {
  return bindingCounts(kd).reduce((a, b) => a + b, 0);
}

/** A batched step's kernel: the plain kernel's interface, with the named bindings one buffer per row (rows.glsl). */
const rowsOf = <B extends string, P extends string>(d: KernelDecl<B, P>, rows: readonly B[]): KernelDecl<B, P> => ({ ...d, name: `${d.name}_rows`, rows });

type Field<P> = P extends `${infer N}:f32` ? N : P extends '_' ? never : P;
export type PushOf<K> = K extends KernelDecl<string, infer P> ? { [F in Field<P>]: number } : never;
/** Buffer ids by binding name; a _rows kernel's per-row bindings take one id per row. */
export type BindOf<K> = K extends KernelDecl<infer B, string> ? Record<B, number | readonly number[]> : never;

const k = <B extends string, P extends string>(d: KernelDecl<B, P>) => d;

/** The 16-word push block shared by the matvec family (shaders/matvec_push.glsl: matvec.glsl, mm.glsl, mv.glsl). */
const MATVEC_PUSH = ['rows', 'n', 'rowBytes', 'xStride', 'yStride', 'flags', 'K', 'expertBytes', 'wOffset', 'xOffset', 'yOffset', 'nRows', 'upBytes', 'e0', 'ne', 'aux'] as const;
const MATVEC_BIND = ['W', 'X', 'Y', 'IDS', 'GRID'] as const;

export const KERNELS = {
  step_in: k({ name: 'step_in', bindings: ['XIN', 'X', 'PIN', 'PARAMS'], push: ['n', 'np'], local: 256, per: 256 }),
  rmsnorm: k({ name: 'rmsnorm', bindings: ['X', 'A', 'weight', 'R', 'DE', 'WTS', 'DS', 'SG', 'XQ', 'XS'], push: ['n', 'row0', 'eps:f32', 'mode', 'K', 'quant', '_', '_'], local: 1024 }),
  // CK: a draft step's history / state after each of its first ckRows tokens (0: none kept)
  ssm_conv: k({ name: 'ssm_conv', bindings: ['U', 'weight', 'state', 'CK'], push: ['convCh', 'T', 'width', 'ckRows'], local: 256, per: 32 }),
  deltanet: k({ name: 'deltanet', bindings: ['U', 'B', 'AL', 'dtBias', 'A', 'state', 'O', 'Z', 'normWeight', 'CK'], push: ['T', 'dk', 'hk', 'hv', 'convCh', 'eps:f32', 'qScale:f32', 'ckRows'], local: 512 }),
  deltanet_prep: k({ name: 'deltanet_prep', bindings: ['U', 'B', 'AL', 'dtBias', 'A', 'DBK'], push: ['T', 'dk', 'hk', 'hv', 'convCh', 'eps:f32', 'qScale:f32', '_'], local: 256 }),
  deltanet_chunk: k({ name: 'deltanet_chunk', bindings: ['U', 'DBK', 'state', 'O'], push: ['T', 'dk', 'hk', 'hv', 'convCh', 'eps:f32', 'qScale:f32', '_'], local: 256, per: 32 }),
  // the same with 16 row parts a column (NP = 16: 512 threads, 8 key rows a thread)
  deltanet_chunk_p16: k({ name: 'deltanet_chunk_p16', bindings: ['U', 'DBK', 'state', 'O'], push: ['T', 'dk', 'hk', 'hv', 'convCh', 'eps:f32', 'qScale:f32', '_'], local: 512, per: 32 }),
  ssm_gnorm: k({ name: 'ssm_gnorm', bindings: ['O', 'Z', 'normWeight'], push: ['dk', 'hv', 'eps:f32', '_'], local: 128 }),
  qk_prep: k({ name: 'qk_prep', bindings: ['QG', 'K', 'qNorm', 'kNorm', 'ROPE', 'PARAMS'], push: ['nHead', 'nHeadKv', 'hd', 'nRot', 'qStride', 'kStride', 'eps:f32', '_'], local: 256 }),
  kv_store: k({ name: 'kv_store', bindings: ['src', 'src2', 'cache', 'cache2', 'PARAMS'], push: ['kvDim', 'rowBytes'], local: 64 }),
  attn_flash: k({ name: 'attn_flash', bindings: ['QG', 'Kc', 'Vc', 'P', 'ML', 'PARAMS'], push: ['nHead', 'nHeadKv', 'hd', 'kRowBytes', 'vRowBytes', 'qStride', 'scale:f32', 'nBlk', 'blk', 't0', 'grow', '_'], local: 256 }),
  attn_tile: k({ name: 'attn_tile', bindings: ['QG', 'Kc', 'Vc', 'P', 'ML', 'PARAMS'], push: ['nHead', 'nHeadKv', 'hd', 'kRowBytes', 'vRowBytes', 'qStride', 'scale:f32', 'nBlk', 'blk', 't0', 'nTok', 'tq'], local: 256 }),
  /**
   * attn_tile on the matrix units over the operands attn_decode wrote (QD, KD, VD: attn-decoded.ts):
   * attn_tile's dispatch, push block (kScales / vLo in place of the rows' bytes) and partials
   */
  attn_mmc: k({ name: 'attn_mmc', bindings: ['QD', 'KD', 'VD', 'P', 'ML', 'PARAMS'], push: ['nHead', 'nHeadKv', 'hd', 'kScales', 'vLo', 'qStride', 'scale:f32', 'nBlk', 'blk', 't0', 'nTok', 'tq'], local: 512 }),
  /** part 0: the K and V caches up to the step's last key, part 1: a dispatch pair's Q (attn-decoded.ts) */
  attn_decode: k({ name: 'attn_decode', bindings: ['QG', 'Kc', 'Vc', 'QD', 'KD', 'VD', 'PARAMS'], push: ['nHead', 'nHeadKv', 'hd', 'kRowBytes', 'vRowBytes', 'qStride', 'nTok', 't0', 'kScales', 'vLo', 'part', '_'], local: 256 }),
  attn_merge: k({ name: 'attn_merge', bindings: ['P', 'ML', 'QG', 'O', 'PARAMS'], push: ['nHead', 'hd', 'nBlk', 'qStride', 'blk', 't0', 'grow', '_'], local: 1024 }),
  steer: k({ name: 'steer', bindings: ['Y', 'STEER'], push: ['n', 'dOffset', 's:f32', '_'], local: 256 }),
  subgroup_probe: k({ name: 'subgroup_probe', bindings: ['O'], push: [], local: 256 }),
  router: k({ name: 'router', bindings: ['R', 'IDS', 'WTS'], push: ['nExpert', 'K'], local: 64 }),
  swiglu: k({ name: 'swiglu', bindings: ['G', 'U'], push: ['n'], local: 256, per: 256 }),
  moe_tiles: k({ name: 'moe_tiles', bindings: ['IDS', 'LIST', 'TILES'], push: ['nPairs', 'nExpert', 'BN', '_'], local: 1024 }),
  moe_combine: k({ name: 'moe_combine', bindings: ['M', 'DE', 'WTS', 'DS', 'SG'], push: ['nEmbd', 'K', 'T'], local: 256, per: 256 }),
  quant: k({ name: 'quant', bindings: ['X', 'XQ', 'XS'], push: ['n', '_', '_', '_'], local: 64, per: 256 }),
  copy: k({ name: 'copy', bindings: ['SRC', 'DST'], push: ['n4'], local: 256 }),
  argmax: k({ name: 'argmax', bindings: ['LOGITS', 'TKA', 'TKB', 'ARG', 'MASK'], push: ['n', 'offset', 'stage', 'groups'], local: 256, per: 1024 }),
  topk: k({ name: 'topk', bindings: ['LOGITS', 'src', 'dst'], push: ['n', 'k', 'offset', 'stage'], local: 256 }),
  state_t: k({ name: 'state_t', bindings: ['src', 'dst'], push: ['dk', '_', '_', '_'], local: 256, per: 32 }),
  matvec: k({ name: 'matvec', bindings: MATVEC_BIND, push: MATVEC_PUSH, local: 64 }),
  matvec1: k({ name: 'matvec1', bindings: MATVEC_BIND, push: MATVEC_PUSH, local: 64 }),
  matvec2: k({ name: 'matvec2', bindings: MATVEC_BIND, push: MATVEC_PUSH, local: 64 }),
  matmul: k({ name: 'matmul', bindings: MATVEC_BIND, push: MATVEC_PUSH, local: 64 }),
  matmul2: k({ name: 'matmul2', bindings: MATVEC_BIND, push: MATVEC_PUSH, local: 64 }),
  matmul4: k({ name: 'matmul4', bindings: MATVEC_BIND, push: MATVEC_PUSH, local: 64 }),
  // matmul2 / matmul4 with 1 or 2 output rows a workgroup (decodeRows' choice for few rows)
  matmul2r1: k({ name: 'matmul2r1', bindings: MATVEC_BIND, push: MATVEC_PUSH, local: 64 }),
  matmul2r2: k({ name: 'matmul2r2', bindings: MATVEC_BIND, push: MATVEC_PUSH, local: 64 }),
  matmul4r1: k({ name: 'matmul4r1', bindings: MATVEC_BIND, push: MATVEC_PUSH, local: 64 }),
  matmul4r2: k({ name: 'matmul4r2', bindings: MATVEC_BIND, push: MATVEC_PUSH, local: 64 }),
  mv: k({ name: 'mv', bindings: MATVEC_BIND, push: MATVEC_PUSH, local: 64 }),
  // one activation row as int8 levels (XQ) and their scales (XS), packed integer dot products;
  // mvq2, mvq4: 2 or 4 activation rows a workgroup
  mvq: k({ name: 'mvq', bindings: [...MATVEC_BIND, 'XS'], push: MATVEC_PUSH, local: 64 }),
  mvq2: k({ name: 'mvq2', bindings: [...MATVEC_BIND, 'XS'], push: MATVEC_PUSH, local: 64 }),
  mvq4: k({ name: 'mvq4', bindings: [...MATVEC_BIND, 'XS'], push: MATVEC_PUSH, local: 64 }),
  // mvq with four sets of rows a workgroup (the routed pairs)
  mvqw: k({ name: 'mvqw', bindings: [...MATVEC_BIND, 'XS'], push: MATVEC_PUSH, local: 256 }),
  matvec_router: k({ name: 'matvec_router', bindings: [...MATVEC_BIND, 'RIDS', 'RWTS', 'CNT'], push: MATVEC_PUSH, local: 64 }),
  matvec_router1: k({ name: 'matvec_router1', bindings: [...MATVEC_BIND, 'RIDS', 'RWTS', 'CNT'], push: MATVEC_PUSH, local: 64 }),
  mm: k({ name: 'mm', bindings: MATVEC_BIND, push: MATVEC_PUSH, local: 256 }),
  mm_moe: k({ name: 'mm_moe', bindings: [...MATVEC_BIND, 'TILES'], push: MATVEC_PUSH, local: 128 }),
  // mm and mm_moe on the matrix units (cooperative matrices; built where glslc can: build-shaders.mjs)
  mmc: k({ name: 'mmc', bindings: MATVEC_BIND, push: MATVEC_PUSH, local: 256 }),
  mmc_moe: k({ name: 'mmc_moe', bindings: [...MATVEC_BIND, 'TILES'], push: MATVEC_PUSH, local: 256 }),
  mmc_glu: k({ name: 'mmc_glu', bindings: MATVEC_BIND, push: MATVEC_PUSH, local: 256 }),
  mmc_moe_glu: k({ name: 'mmc_moe_glu', bindings: [...MATVEC_BIND, 'TILES'], push: MATVEC_PUSH, local: 256 }),
  // mm and mm_moe with packed f16 products (opt-in where there are no matrix units: Q36_VK_F16)
  mmh: k({ name: 'mmh', bindings: MATVEC_BIND, push: MATVEC_PUSH, local: 256 }),
  mmh_moe: k({ name: 'mmh_moe', bindings: [...MATVEC_BIND, 'TILES'], push: MATVEC_PUSH, local: 128 }),
} as const;

/**
 * A batched decode step's per-row kernels, each one dispatch for all rows (rows.glsl): the plain
 * kernel's code and push block; the scratch bound whole (row r = token r), the session's own
 * buffers (state, cache, PARAMS row) as arrays, at most 27 buffers (lavapipe binds 32).
 */
export const ROW_KERNELS = {
  ssm_conv: rowsOf(KERNELS.ssm_conv, ['state']),
  deltanet: rowsOf(KERNELS.deltanet, ['state']),
  qk_prep: rowsOf(KERNELS.qk_prep, ['PARAMS']),
  kv_store: rowsOf(KERNELS.kv_store, ['cache', 'cache2', 'PARAMS']),
  attn_flash: rowsOf(KERNELS.attn_flash, ['Kc', 'Vc', 'PARAMS']),
  attn_merge: rowsOf(KERNELS.attn_merge, ['PARAMS']),
} as const;

export type KernelName = keyof typeof KERNELS;

/** Workgroups for n items along x (the kernel's `per`). */
export function groups(kd: KernelDecl, n: number): number {
  if (!kd.per) throw new Error(`${kd.name}: no items-per-workgroup declared`);
  return Math.ceil(n / kd.per);
}

const f2u = new Float32Array(1);
const u32 = new Uint32Array(f2u.buffer);
export function fbits(x: number): number {
  f2u[0] = x;
  return u32[0];
}

/** The push words of a kernel in declaration order (floats as their bits, padding 0). */
export function pushWords<K extends KernelDecl>(kd: K, values: PushOf<K>): number[] {
  const v = values as Record<string, number>;
  return kd.push.map((f) => {
    if (f === '_') return 0;
    const [name, type] = f.split(':');
    const x = v[name];
    if (x === undefined || !Number.isFinite(x)) throw new Error(`${kd.name}: push field ${name} is ${x}`);
    return type === 'f32' ? fbits(x) : x >>> 0;
  });
}

/**
 * The buffers of a kernel in binding order: a per-row binding array as its rows' buffers, the
 * elements past the last row repeating row 0's (bound, never read: the grid has no such rows).
 */
export function bindingList<K extends KernelDecl>(kd: K, b: BindOf<K>): number[] {
  const r = b as Record<string, number | readonly number[]>;
  return kd.bindings.flatMap((n) => {
    const v = r[n];
    if (v === undefined) throw new Error(`${kd.name}: binding ${n} not given`);
    const perRow = kd.rows?.includes(n) ?? false;
    if (typeof v === 'number') {
      if (perRow) throw new Error(`${kd.name}: binding ${n} takes one buffer per row`);
      return [v];
    }
    if (!perRow) throw new Error(`${kd.name}: binding ${n} takes one buffer`);
    if (v.length < 1 || v.length > ROW_ARRAY) throw new Error(`${kd.name}: binding ${n} takes 1..${ROW_ARRAY} rows (got ${v.length})`);
    return Array.from({ length: ROW_ARRAY }, (_, i) => v[i] ?? v[0]);
  });
}

export interface DispatchOpts {
  /** variant suffix (weight or cache types): matvec_q8_0, kv_store_f16 */
  variant?: string;
  /** a barrier after the dispatch (default); false lets the next op overlap */
  barrier?: boolean;
  /** for profiles: which weight or layer */
  label?: string;
}

/** What dispatch() appends to: graph.ts's OpList (kept as an interface so this module imports nothing). */
export interface OpSink {
  op(shader: string, buffers: number[], push: number[], groups: [number, number?, number?], barrier?: boolean, label?: string): unknown;
}

/** One dispatch of a declared kernel, through the op list (the addon's single dispatch path). */
export function dispatch<K extends KernelDecl>(ops: OpSink, kd: K, b: BindOf<K>, push: PushOf<K>, grid: [number, number?, number?], o: DispatchOpts = {}): void {
  ops.op(o.variant ? `${kd.name}_${o.variant}` : kd.name, bindingList(kd, b), pushWords(kd, push), grid, o.barrier ?? true, o.label);
}
