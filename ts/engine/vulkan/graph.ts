/**
 * Builds the op list of one forward step for the addon's record(): a flat Uint32Array of
 * dispatches. Shapes are fixed per recorded step; per-step inputs (position, embeddings) live in
 * buffers, so a recorded step is replayed for every token without re-recording.
 */
import type { Core } from '../../core/wasm.js';
import type { ModelShape } from '../../model/shape.js';
import type { VkDevice } from '../../vk/addon.js';
import { KERNELS, ROW_KERNELS, bindingCounts, pushWords, type KernelDecl } from './kernels.js';
import { VK_TUNING } from './tuning.js';

/** A weight- or cache-type suffix of a shader variant's name (matvec_q8_0, attn_flash_q8_0_q4_0). */
const TYPE_SUFFIX = /_(f32|f16|bf16|q\d_[01k]|iq\d_(?:xxs|xs|s|m|nl))$/;

/** Every declaration by shader base name (the _rows kernels by theirs: deltanet_rows). */
const DECLS: Record<string, KernelDecl> = { ...KERNELS, ...Object.fromEntries(Object.values(ROW_KERNELS).map((d) => [d.name, d])) };

/** The declaration of a shader variant: its base name's, type suffixes (one, or K and V types) stripped. */
export function declOf(name: string): KernelDecl {
  let base = name;
  while (!(base in DECLS) && TYPE_SUFFIX.test(base)) base = base.replace(TYPE_SUFFIX, '');
  const d = DECLS[base];
  if (!d) throw new Error(`no kernel declaration for shader ${name}`);
  return d;
}

/**
 * Pipeline ids by shader name, created on first use with the interface kernels.ts declares (or
 * `more`: an experiment's own kernels, their modules added to the addon at run time).
 */
export class Pipelines {
  private ids = new Map<string, number>();
  private readonly more: Map<string, KernelDecl>;
  constructor(private readonly dev: VkDevice, more: readonly KernelDecl[] = []) {
    this.more = new Map(more.map((d) => [d.name, d]));
  }
  get(name: string): number {
    let id = this.ids.get(name);
    if (id === undefined) {
      const d = this.more.get(name) ?? declOf(name);
      // the addon refuses a declaration that disagrees with the module's own (SPIR-V reflection)
      id = this.dev.createPipeline(name, d.bindings.length, 4 * d.push.length, bindingCounts(d));
      this.ids.set(name, id);
    }
    return id;
  }
}

/** A recorded step's part: its words, its dispatches' names, and the streamed layer it ends after (-1: the step's end). */
export interface Segment { words: Uint32Array; names: string[]; layer: number }

export class OpList {
  private words: number[] = [];
  /** shader name of each dispatch, in order (for profiles) */
  readonly names: string[] = [];
  /** segment ends: word and name counts where each cut() was made, and its layer */
  private cuts: { word: number; name: number; layer: number }[] = [];
  constructor(private readonly p: Pipelines) {}

  /**
   * Ends a segment after layer `layer`'s routing (SSD streaming: the host loads that layer's
   * experts before the next segment runs). Recorded as separate commands by segments().
   */
  cut(layer: number): this {
    this.cuts.push({ word: this.words.length, name: this.names.length, layer });
    return this;
  }

  /** The op list split at its cuts (one segment, layer -1, without any). */
  segments(): Segment[] {
    const ends = [...this.cuts, { word: this.words.length, name: this.names.length, layer: -1 }];
    let w = 0, n = 0;
    return ends.map((e) => {
      const seg = { words: Uint32Array.from(this.words.slice(w, e.word)), names: this.names.slice(n, e.name), layer: e.layer };
      w = e.word; n = e.name;
      return seg;
    });
  }

  /**
   * One dispatch (push values as u32 words: kernels.ts builds them); a barrier follows by default.
   * Every dispatch of the engine goes through here.
   * label (e.g. the weight's name) goes into names, so profiles can tell one shader's uses apart.
   */
  op(shader: string, buffers: number[], push: number[], groups: [number, number?, number?], barrier = true, label?: string): this {
    const [gx, gy = 1, gz = 1] = groups;
    if (gx < 1 || gy < 1 || gz < 1) throw new Error(`${shader}: empty dispatch ${gx}×${gy}×${gz}`);
    this.names.push(label ? `${shader} ${label}` : shader);
    this.words.push(this.p.get(shader), buffers.length, ...buffers, push.length, ...push.map((x) => x >>> 0), gx, gy, gz, barrier ? 1 : 0);
    return this;
  }

  build(): Uint32Array {
    return Uint32Array.from(this.words);
  }
}

/** Output rows per matvec/matmul workgroup and activation rows per matmul workgroup (matvec.glsl). */
export const MATVEC_ROWS = 4;
/** Output rows per workgroup of the matmuls by activation rows: the 8-row matmul takes 2 (matmul.comp says why). */
export const matmulRows = (tokens: number): number => (tokens === MATMUL_TOKENS ? 2 : MATVEC_ROWS);
/**
 * Output rows per workgroup of a one-activation-row matvec (decode, routed experts): 4, 2 or 1
 * (matvec, matvec2, matvec1; a GLU takes at least 2): the most that still gives
 * VK_TUNING.matvecMinGroups workgroups, else the fewest. `fixed` (the engine's vkMatvecRows,
 * Q36_VK_MV_ROWS at the CLI) pins it, for measuring.
 */
export const MATVEC_MIN_GROUPS: number = VK_TUNING.matvecMinGroups;
export function decodeRows(rows: number, nRows: number, glu: boolean, minGroups = MATVEC_MIN_GROUPS, fixed?: 1 | 2 | 4): number {
  if (fixed) return glu ? Math.max(2, fixed) : fixed;
  const choices = glu ? [4, 2] : [4, 2, 1];
  return choices.find((r) => Math.ceil(rows / (glu ? r / 2 : r)) * nRows >= minGroups) ?? choices[choices.length - 1];
}
/** mv.comp (one activation row by 32-weight units): the threads sharing a row, n/32 units rounded up to a power of two, at most 64. */
export function mvLanes(n: number): number {
  let L = 1;
  while (L < n / 32 && L < 64) L *= 2;
  return L;
}
/** mv's workgroup target (VK_TUNING.mvMinGroups). */
export const MV_MIN_GROUPS: number = VK_TUNING.mvMinGroups;
/** mv's rows per thread R (its push `aux`): the most of 8, 4, 2, 1 (a GLU: 8, 4, 2) that still gives minGroups workgroups, else the fewest workgroups' choice. */
export function mvRows(rows: number, n: number, nRows: number, glu: boolean, minGroups = MV_MIN_GROUPS, fixed?: 1 | 2 | 4 | 8): number {
  if (fixed) return glu ? Math.max(2, fixed) : fixed;
  const S = 64 / mvLanes(n), choices = glu ? [8, 4, 2] : [8, 4, 2, 1];
  return choices.find((r) => Math.ceil(rows / (S * (glu ? r / 2 : r))) * nRows >= minGroups) ?? choices[choices.length - 1];
}
export const MATMUL_TOKENS = 8;
/**
 * Weight types whose 5-8 activation rows run as two 4-row matmul workgroups (matmul4) rather than
 * one 8-row one (VK_TUNING.split8Types). Bit-identical either way (matvec.glsl: a row's sums do
 * not depend on the rows a workgroup takes).
 */
export const SPLIT8_TYPES: ReadonlySet<string> = new Set(VK_TUNING.split8Types);
/** Activation rows per matmul workgroup for nRows ≥ 2 rows: the fewest of 2, 4, 8 that cover them (a batched decode step's rows), 4 for SPLIT8_TYPES up to 8. */
export function matmulTokens(type: string, nRows: number): number {
  return nRows <= 2 ? 2 : nRows <= 4 || (nRows <= MATMUL_TOKENS && SPLIT8_TYPES.has(type)) ? 4 : MATMUL_TOKENS;
}
/**
 * Weight types with mvq.comp / mvq2.comp / mvq4.comp variants (32-weight units against int8
 * activation levels, packed integer dot products; mvq2, mvq4: 2 or 4 activation rows a workgroup,
 * each summed as mvq sums it alone; VK_TUNING.mvqTypes, as shaders/variants.json builds them) and
 * their output rows per workgroup.
 */
export const MVQ_TYPES: ReadonlySet<string> = new Set(VK_TUNING.mvqTypes);
export const MVQ_ROWS = 4;
/**
 * Activation rows a workgroup of the several-row mvq forms for nRows plain rows: mvq2 for 2 (a 4-row
 * workgroup would compute 2 spare rows), else mvq4 (an 8-row form was slower; docs/vulkan.md,
 * "Kernel choices").
 */
export function mvqTokens(nRows: number): 2 | 4 {
  return nRows <= 2 ? 2 : 4;
}
/**
 * Lanes a row of an mvq dispatch (matvecOp caps it at the row's units and passes it as pc.aux). A
 * row's sum depends on it, so it depends only on what the product is, never on how many rows it
 * runs: plain activation rows (the dense products: decode and batched steps alike) 32, routed
 * pairs 64 (docs/vulkan.md, "Kernel choices").
 */
export function mvqLanes(gather: boolean): number {
  return gather ? 64 : 32;
}
/**
 * Whether mvq.comp takes a weight's products: its type has the variants, and its rows (n values)
 * are 32-value units, min(L, n/32) threads a row, so n/32 ≥ 64 or a divisor of 64.
 */
export function mvqTakes(type: string, n: number): boolean {
  const nu = n / 32;
  return MVQ_TYPES.has(type) && n % 32 === 0 && (nu >= 64 || 64 % nu === 0);
}
/** The tiled matmuls (mm.glsl): weight rows per tile, activation rows per tile (dense / experts), reduction step. */
export const MM_ROWS = 64;
/** Weight rows per tile of the dense mmc (each staged activation tile serves twice mm's rows: docs/vulkan.md); its GLU and routed forms keep MM_ROWS. */
export const MMC_ROWS = 128;
export const MM_TOKENS = 64;
export const MM_MOE_PAIRS = 32;
/** Pairs per tile of mmc_moe and mmc_moe_glu (VK_TUNING.mmcMoePairs; the modules' BN). */
export const MMC_MOE_PAIRS: number = VK_TUNING.mmcMoePairs;
/** Pairs per expert tile for the tiled matmul in use (moe_tiles' BN). */
export const moePairs = (coopmat: boolean): number => (coopmat ? MMC_MOE_PAIRS : MM_MOE_PAIRS);
export const MM_K = 32;
/** Tokens of a block of the chunked DeltaNet, and the floats deltanet_prep records for each block and value head (shaders/deltanet_block.glsl: G, β, 2 norm factors a token, A and QK). */
export const DELTANET_BLOCK = 16;
export const DELTANET_BLOCK_FLOATS = 4 * DELTANET_BLOCK + 2 * DELTANET_BLOCK * DELTANET_BLOCK;
/**
 * The tiled matmul's kernel: mm / mm_moe (f32 tiles), mmh / mmh_moe (the same tiles with packed f16
 * products), mmc / mmc_moe on the matrix units, where a GLU has modules of its own (mmc_glu, mmc_moe_glu).
 */
const tiledKernel = (coopmat: boolean | undefined, glu: boolean, moe: boolean, f16?: boolean): string => `${coopmat ? 'mmc' : f16 ? 'mmh' : 'mm'}${moe ? '_moe' : ''}${coopmat && glu ? '_glu' : ''}`;
/** Weight rows per workgroup of that kernel. */
const tiledRows = (coopmat: boolean | undefined, glu: boolean, moe: boolean): number => (coopmat && !glu && !moe ? MMC_ROWS : MM_ROWS);
/**
 * Fewest activation rows, and weight rows, for which the dense tiled matmul beats the 8-row
 * matmul (VK_TUNING: a weight of fewer than 64 rows fills part of one 64-row tile, as the
 * shared-expert gate's single row and DeltaNet's 32-row α and β would).
 */
export const MM_MIN_ROWS: number = VK_TUNING.mmMinRows;
export const MM_MIN_WEIGHT_ROWS: number = VK_TUNING.mmMinWeightRows;

/** Tiles of at most bn pairs (the most tiles: MM_MOE_PAIRS) that P (token, expert) pairs over nExpert experts can make. */
export function moeMaxTiles(pairs: number, nExpert: number, bn = MM_MOE_PAIRS): number {
  return Math.ceil(pairs / bn) + Math.min(nExpert, pairs);
}


/** Weight types whose decoders assume 4-byte aligned blocks (their block sizes are multiples of 4: decode.glsl reads them with plain word loads). */
const WORD_ALIGNED = new Set(['q2_k', 'q4_k', 'q5_k']);

/**
 * matvec.glsl's modes (pc.flags), by name: expert gather (W offset from the pair's expert id), X
 * row j itself (a routed pair's own activation row, not its token's), GLU (gate and up rows, the
 * product silu(g)·u), and the activation-row groups along x (mvq2/mvq4: the workgroups reading
 * one weight row run together).
 */
export const MV = { gather: 1, ownRow: 2, glu: 4, across: 8 } as const;

export interface MatvecDispatch {
  /** weight type suffix: f32, q8_0, iq2_xxs, … */
  type: string;
  /** weights, activations, output, expert ids, the IQ lookup tables (gridBlob()) */
  buffers: [number, number, number, number, number];
  rows: number; n: number; rowBytes: number;
  /** activation rows (tokens, or token·K rows for routed experts) */
  nRows: number;
  xStride?: number; yStride?: number; xOffset?: number;
  /** byte offset of row 0 in the weight buffer (a weight inside a stack) */
  wOffset?: number;
  /** MV bits: gather, ownRow, glu (matvec.glsl) */
  flags?: number; K?: number; expertBytes?: number;
  /** output row of W's row 0 (a window of rows) */
  yOffset?: number;
  /**
   * Rows of the whole weight when this dispatch is one window of it: the kernel choice (mm or
   * matmul, which add in different orders) follows the weight, so windows change no bits.
   */
  weightRows?: number;
  /** GLU: bytes from a gate row to its up row (may be negative) */
  upBytes?: number;
  /** routed experts: the experts [e0, e0 + ne) this binding holds (a window); default all */
  e0?: number; ne?: number;
  /**
   * A matvec with an epilogue run by the last workgroup of each activation row (matvec_router:
   * routing, needs extra = [IDS, WTS, CNT] with a CNT word per row, and aux = nExpert): decode and
   * batched decode steps (one activation row a workgroup, whatever nRows; no expert gather).
   */
  epilogue?: { shader: 'matvec_router'; extra: number[]; aux: number };
  barrier?: boolean;
  /** for profiles: the weight's name */
  label?: string;
  /**
   * Workgroups a one-activation-row matvec should reach (decodeRows); default MATVEC_MIN_GROUPS.
   * 0 on a CPU device (lavapipe), where more workgroups only add overhead: 4 rows each.
   */
  minGroups?: number;
  /** rows per workgroup pinned (decodeRows; mv: rows per thread, 8 allowed) */
  fixedRows?: 1 | 2 | 4 | 8;
  /** one activation row through mv.comp (32-weight units: true, for measurements: Q36_VK_MV) or matvec.comp (the default: docs/vulkan.md says why) */
  unit?: boolean;
  /**
   * The activation rows also as int8 levels (q: XQ, s: XS; rmsnorm quant, quant.comp): a product
   * mvq takes (mvqTakes) runs over them, mvq.comp for one activation row, mvqw.comp for routed
   * pairs, mvq2.comp or mvq4.comp for several plain rows (mvqTokens)
   */
  levels?: { q: number; s: number };
  /** several plain rows over levels: activation rows a workgroup pinned (bench-mvq); default mvqTokens() */
  mvqTokens?: 2 | 4;
  /** lanes a row pinned (bench-mvq); default mvqLanes() */
  mvqLanes?: 16 | 32 | 64;
  /** one activation row a workgroup: 256-thread workgroups (mvqw) pinned on or off (bench-mvq); default: for routed pairs (docs/vulkan.md) */
  mvqWide?: boolean;
  /**
   * Routed experts with the pairs grouped by expert (moe_tiles.comp): buffers[3] is LIST and
   * this the TILES buffer and its capacity; the tiled mm_moe runs where the shape allows, else
   * the matvec over IDS (ids).
   */
  moe?: { tiles: number; maxTiles: number; ids: number };
  /** the tiled matmuls on the matrix units: mmc / mmc_moe (f16 tiles, f32 sums) in place of mm / mm_moe */
  coopmat?: boolean;
  /** elsewhere the tiles with packed f16 products: mmh / mmh_moe in place of mm / mm_moe */
  f16?: boolean;
}

/**
 * One weight × activations product: the matmul shader (8 activation rows share each decoded weight
 * group) for several plain rows, the matvec shader for one row or routed experts (each activation
 * row has its own expert, so there is nothing to share).
 */
export function matvecOp(ops: OpList, d: MatvecDispatch): void {
  const flags = d.flags ?? 0;
  // Q2_K, Q4_K and Q5_K blocks are read with plain word loads (decode.glsl): rows and every
  // offset into the weight must keep them 4-byte aligned
  if (WORD_ALIGNED.has(d.type) && [d.rowBytes, d.wOffset ?? 0, d.expertBytes ?? 0, d.upBytes ?? 0].some((x) => x % 4 !== 0)) throw new Error(`matvec_${d.type}: rows and offsets must be multiples of 4 bytes`);
  // the shaders read activations 8 floats at a time from group boundaries
  if (d.n % 8 !== 0 || (d.xOffset ?? 0) % 8 !== 0 || (d.xStride ?? d.n) % 8 !== 0) throw new Error(`matvec_${d.type}: n, xOffset and xStride must be multiples of 8`);
  const push = (aux = d.epilogue?.aux ?? 0, more = 0) => pushWords(KERNELS.matvec, {
    rows: d.rows, n: d.n, rowBytes: d.rowBytes, xStride: d.xStride ?? d.n, yStride: d.yStride ?? d.rows, flags: flags | more, K: d.K ?? 1, expertBytes: d.expertBytes ?? 0,
    wOffset: d.wOffset ?? 0, xOffset: d.xOffset ?? 0, yOffset: d.yOffset ?? 0, nRows: d.nRows, upBytes: d.upBytes ?? 0, e0: d.e0 ?? 0, ne: d.ne ?? 0xffffffff, aux,
  });
  // the tiled matmuls step through rows 32 values at a time
  const tiled = d.n % MM_K === 0 && !d.epilogue;
  const glu = (flags & MV.glu) !== 0;
  if (d.moe) {
    if (tiled) {
      ops.op(`${tiledKernel(d.coopmat, glu, true, d.f16)}_${d.type}`, [...d.buffers, d.moe.tiles], push(), [Math.ceil(d.rows / tiledRows(d.coopmat, glu, true)), d.moe.maxTiles], d.barrier ?? true, d.label);
      return;
    }
    d = { ...d, buffers: [d.buffers[0], d.buffers[1], d.buffers[2], d.moe.ids, d.buffers[4]], moe: undefined };
  } else if (tiled && (flags & MV.gather) === 0 && d.nRows >= MM_MIN_ROWS && (d.weightRows ?? d.rows) >= MM_MIN_WEIGHT_ROWS) {
    ops.op(`${tiledKernel(d.coopmat, glu, false, d.f16)}_${d.type}`, d.buffers, push(), [Math.ceil(d.rows / tiledRows(d.coopmat, glu, false)), Math.ceil(d.nRows / MM_TOKENS)], d.barrier ?? true, d.label);
    return;
  }
  // activation rows per workgroup: matmulTokens() (each row's sums are the same whichever, the
  // order over groups is fixed)
  const tokens = d.nRows > 1 && (flags & MV.gather) === 0 && !d.epilogue ? matmulTokens(d.type, d.nRows) : 1;
  if (d.epilogue && (flags & MV.gather) !== 0) throw new Error(`${d.epilogue.shader}: no expert gather`);
  if (d.levels && !d.epilogue && mvqTakes(d.type, d.n)) {
    // L lanes a row, (workgroup size) / L sets of rows a workgroup (mvq.glsl); several plain activation rows 2
    // or 4 a workgroup (mvq2, mvq4: each row summed as mvq sums it alone, at the same L)
    const gather = (flags & MV.gather) !== 0;
    const t = !gather && d.nRows > 1 ? d.mvqTokens ?? mvqTokens(d.nRows) : 1;
    const L = Math.min(d.mvqLanes ?? mvqLanes(gather), d.n / 32);
    // one row of routed pairs a workgroup: 256 threads (mvqw, four sets of rows each summed as mvq sums it)
    const wide = t === 1 && (d.mvqWide ?? gather);
    const perWg = (KERNELS[wide ? 'mvqw' : 'mvq'].local / L) * (glu ? MVQ_ROWS / 2 : MVQ_ROWS), grid: [number, number] = [Math.ceil(d.rows / perWg), Math.ceil(d.nRows / t)];
    // several groups of activation rows: the groups along x (flags bit 3), so that the workgroups
    // reading one weight row run together (the 8-row LM head read its 540 MB twice)
    const across = t > 1 && grid[1] > 1 && grid[0] <= 65535;
    ops.op(`${t > 1 ? `mvq${t}` : wide ? 'mvqw' : 'mvq'}_${d.type}`, [d.buffers[0], d.levels.q, d.buffers[2], d.buffers[3], d.buffers[4], d.levels.s], push(L, across ? MV.across : 0), across ? [grid[1], grid[0]] : grid, d.barrier ?? true, d.label);
    return;
  }
  if (d.unit === true && tokens === 1 && !d.epilogue && d.n % 32 === 0) {
    const R = mvRows(d.rows, d.n, d.nRows, glu, d.minGroups, d.fixedRows), S = 64 / mvLanes(d.n);
    ops.op(`mv_${d.type}`, d.buffers, push(R), [Math.ceil(d.rows / (S * (glu ? R / 2 : R))), d.nRows], d.barrier ?? true, d.label);
    return;
  }
  // rows per workgroup: the 8-row matmul matmulRows(); one activation row, and the 2- and 4-row
  // matmuls of a few rows (draft and batched steps): decodeRows() over their workgroup columns
  // (the router epilogue has a 1- and a 4-row form)
  let rows = tokens === MATMUL_TOKENS ? matmulRows(tokens) : decodeRows(d.rows, Math.ceil(d.nRows / tokens), glu, d.minGroups, d.fixedRows === 8 ? 4 : d.fixedRows);
  if (d.epilogue && rows === 2) rows = MATVEC_ROWS;
  const few = tokens > 1 && tokens < MATMUL_TOKENS && rows !== MATVEC_ROWS ? `r${rows}` : '';
  const shader = d.epilogue ? `${d.epilogue.shader}${rows === 1 ? '1' : ''}` : tokens > 1 ? `matmul${tokens === MATMUL_TOKENS ? '' : tokens}${few}` : rows === MATVEC_ROWS ? 'matvec' : `matvec${rows}`;
  ops.op(`${shader}_${d.type}`, [...d.buffers, ...(d.epilogue?.extra ?? [])], push(), [Math.ceil(d.rows / (glu ? rows / 2 : rows)), Math.ceil(d.nRows / tokens)], d.barrier ?? true, d.label);
}

/** The decoders' lookup tables (scripts/build/gen-tables.mjs) from the WASM core: the shaders' GRID binding. */
export function gridBlob(core: Core): Uint8Array {
  const x = core.x as unknown as { gridBlobPtr(): number; gridBlobBytes(): number };
  return new Uint8Array(core.memory.buffer, x.gridBlobPtr(), x.gridBlobBytes()).slice();
}

/** Largest k the GPU top-k serves (a larger one reads the whole row); items per topk workgroup. */
export const TOPK_MAX = 64;
export const TOPK_ITEMS = 1024;

/**
 * Key positions per attention workgroup: short blocks for one token (parallelism), long for
 * prefill (bounds P); attn_flash within its 2048 shared scores for the G heads of a KV head,
 * attn_tile (`tiled`) any multiple of its 64-key tiles: 256, and ATTN_MMC_BLOCK on the matrix
 * units (`coopmat`, attn_mmc).
 */
export function attnBlock(s: ModelShape, T: number, tiled = attnTileFits(s), coopmat = false): number {
  if (T === 1) return 64;
  return tiled ? (coopmat ? ATTN_MMC_BLOCK : 256) : Math.min(512, 2048 / (s.nHead / s.nHeadKv));
}

/**
 * attn_mmc's key block: each block's workgroup stages its query rows again and writes (and
 * attn_merge reads) a partial per row, so on the matrix units, where the products themselves are
 * cheap, fewer longer blocks pay less of that (docs/vulkan.md's choices table). The
 * sums are grouped differently from the f32 tiles' 256: a different rounding, not other math.
 */
export const ATTN_MMC_BLOCK = 1024;

/**
 * A decode attention block's key positions at position p (shaders/attn_span.glsl, which
 * attn_flash and attn_merge run: this mirror is for reports): the base block doubled, up to 512,
 * while the context would take more than 96 blocks; prefill blocks (grow 0) stay the base.
 */
export function attnSpan(p: number, blk: number, grow: number): number {
  let b = blk;
  if (grow) while (b < 512 && p + 1 > 96 * b) b *= 2;
  return b;
}

/** attn_tile (prefill attention over tiles of 64 query rows): head dims a multiple of 32, ≤ 256. */
export function attnTileFits(s: ModelShape): boolean {
  return s.headDim % 32 === 0 && s.headDim <= 256 && s.nHead / s.nHeadKv <= 64;
}

/** Tokens per attn_tile workgroup: as many as fit 64 rows of G query heads each. */
export function attnTileTokens(s: ModelShape): number {
  return Math.floor(64 / (s.nHead / s.nHeadKv));
}

/**
 * Tokens per attention + attn_merge dispatch pair: a longer prefill chunk runs its attention as
 * several pairs, so the partials (P, ML: tokens × heads × ⌈ctx / blk⌉) do not grow with the chunk.
 * 2048-token steps (large GPUs, defaults.ts) take VK_TUNING.attnTokensLarge per pair: a 64-token
 * pair at depth 32K was 2048 attn_tile workgroups, 8 waves on an H200, and each pair's last wave
 * ran part-empty before the barrier; the partials then take 4 × the memory (1.1 GB at ctx 65536, f32).
 * On the matrix units (`units`: attn-decoded.ts) such steps take VK_TUNING.attnTokensUnits: half
 * the pairs, each Q decoded once, in partials of 1024-key blocks (ATTN_MMC_BLOCK).
 */
export const ATTN_TOKENS: number = VK_TUNING.attnTokens;
export function attnTokens(chunk: number, units = false): number {
  return chunk >= VK_TUNING.attnTokensLargeFrom ? (units ? VK_TUNING.attnTokensUnits : VK_TUNING.attnTokensLarge) : ATTN_TOKENS;
}

/**
 * The attention partials' (token, query head, block) slots: the larger of the decode and the chunk
 * shapes. Each slot has a partial sum of headDim floats (P) and a (max, sum) pair (ML). `units`:
 * the chunk's attention runs on the matrix units (attn-decoded.ts attnOnMatrixUnits, with the
 * tiles on), in pairs of attnTokens(T, true) tokens over ATTN_MMC_BLOCK-key blocks.
 */
export function attnSlots(s: ModelShape, T: number, ctx: number, batch = 1, units = false): number {
  // a batched decode step (batch rows of one token each) keeps every row's decode partials
  const decodeRows = batch * s.nHead * Math.ceil(ctx / attnBlock(s, 1));
  const chunk = units ? [Math.min(T, attnTokens(T, true)) * s.nHead * Math.ceil(ctx / ATTN_MMC_BLOCK)]
    : [1, Math.min(T, attnTokens(T))].flatMap((t) => [true, false].map((tiled) => t * s.nHead * Math.ceil(ctx / attnBlock(s, t, tiled))));
  return Math.max(decodeRows, ...chunk);
}
