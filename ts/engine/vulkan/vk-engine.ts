/**
 * The Vulkan backend: weights in device buffers, one recorded command sequence per step shape
 * (replayed for every token), the same Session behaviour and payload as the CPU engine (through
 * BaseSession). The forward pass below mirrors core-as/engine/forward.ts op for op.
 */
import * as fs from 'node:fs';
import { GgmlType, rowBytes, type GgufFile, type TensorInfo } from '../../gguf/index.js';
import { Core } from '../../core/wasm.js';
import { QuantKernels } from '../../core/quant.js';
import type { ModelShape } from '../../model/shape.js';
import type { Tokenizer } from '../../tokenizer/tokenizer.js';
import { loadAddon, type VkDevice } from '../../vk/addon.js';
import { KV_TYPE_IDS, attentionLayer } from '../common.js';
import { openModel } from '../open-model.js';
import { kvBytesPerToken, recurrentStateBytes, stateSizes } from '../payload.js';
import { BackendSettings, BaseSession, type SessionBackend } from '../session-base.js';
import type { Engine, EngineOptions, KvType, SampleOptions, Session } from '../types.js';
import { OpList, PIPELINES, Pipelines, fbits, iq2xxsGrid, matvecOp, type MatvecDispatch } from './graph.js';
import { MATVEC, VkWeights, copiedBytesEstimate, readBytes, type DevTensor, type WeightMode } from './weights.js';

const KV_SHADER: Record<KvType, string> = { f32: 'f32', f16: 'f16', q8_0: 'q8_0', q4_0: 'q4_0' };

interface MatvecOpts { flags?: number; xStride?: number; yStride?: number; xOffset?: number; barrier?: boolean; epilogue?: MatvecDispatch['epilogue'] }

interface SamplerExports {
  sample(logits: number, n: number, temp: number, topK: number, topP: number, minP: number, rng: number): number;
}

export class VkEngine implements Engine {
  readonly backend = 'vulkan' as const;
  readonly shape: ModelShape;
  readonly tokenizer: Tokenizer;
  readonly file: GgufFile;
  readonly dev: VkDevice;
  readonly pipes: Pipelines;
  /** the device's properties and limits (read once) */
  readonly info: ReturnType<VkDevice['info']>;
  readonly chunk: number;
  readonly kv: { k: KvType; v: KvType };
  readonly q: QuantKernels;
  readonly core: Core;
  readonly logitsRows: number;
  /** the weights (see weights.ts: zero-copy import or upload, windows, stacks, fused gate+up) */
  w!: VkWeights;
  /** engine-wide scratch buffers (one step at a time) */
  readonly buf: Record<string, number> = {};
  private embd: { t: TensorInfo; data?: Uint8Array };
  /** the model file, open for the engine's lifetime (weight uploads, then embedding rows) */
  private readonly fd: number;
  private scratchBytes = 0;
  /** recorded top-k commands by k */
  private topkCmds = new Map<number, number>();
  /** why an automatic zero-copy import fell back to upload (for describe()) */
  private importError?: string;
  private sessionBytes: number;
  readonly logitsPtr: number;
  /** the session whose last logits row is still only in LOGITS/ARG (forward deferLast) */
  deferredBy?: VkBackend;
  /** wall milliseconds spent in dev.run (submit to fence) since the engine opened, for benchmarks */
  runMs = 0;
  /** with vkProfile: GPU time of each dispatch of the last step */
  lastProfile?: { names: string[]; ns: Float64Array };

  constructor(readonly options: EngineOptions) {
    ({ file: this.file, shape: this.shape, tokenizer: this.tokenizer } = openModel(options));
    const s = this.shape;
    this.chunk = options.chunk ?? 64;
    this.kv = options.kvTypes ?? { k: 'q8_0', v: 'q4_0' };
    if (s.headDim > 256 || s.ssmHeadDim > 128 || s.nRot > s.headDim) throw new Error('Vulkan backend: head sizes above 256 (attention) / 128 (DeltaNet) are not supported');
    // attn_flash keeps the query rows of one KV head's G query heads in shared memory
    const G = s.nHead / s.nHeadKv;
    if (!Number.isInteger(G) || G > 8 || G * s.headDim > 2048) throw new Error(`Vulkan backend: ${G} query heads of ${s.headDim} per KV head are not supported (at most 8, 2048 values)`);
    this.core = new Core();
    this.q = new QuantKernels(this.core);
    this.logitsPtr = this.core.alloc(s.nVocab * 4);
    const addon = loadAddon();
    const envDev = process.env.Q36_VK_DEVICE;
    this.dev = new addon.Device(options.vkDevice ?? (envDev !== undefined ? Number(envDev) : -1));
    this.pipes = new Pipelines(this.dev, PIPELINES);
    this.info = this.dev.info();
    this.logitsRows = this.chunk * s.nVocab * 4 <= 64 << 20 ? this.chunk : 1;
    this.sessionBytes = this.sessionSize();
    let fd = -1;
    try {
      this.fd = fd = fs.openSync(options.model, 'r');
      const mode = this.weightMode();
      this.checkBudget(mode);
      this.loadWeights(mode);
      this.allocScratch();
    } catch (e) {
      this.dev.dispose();
      if (fd >= 0) fs.closeSync(fd);
      throw e;
    }
    const et = this.file.tensorByName.get('token_embd.weight')!;
    this.embd = { t: et, data: et.nbytes <= 256 << 20 ? readBytes(this.fd, et, 0, et.nbytes) : undefined };
  }

  private sessionSize(): number {
    const s = this.shape, st = stateSizes(s), ctx = this.options.ctx;
    let b = ctx * (s.nRot / 2) * 8;
    for (const r of s.recurrent) b += r ? st.convBytes + st.ssmBytes : ctx * (rowBytes(KV_TYPE_IDS[this.kv.k], st.kvDim) + rowBytes(KV_TYPE_IDS[this.kv.v], st.kvDim));
    return b;
  }

  /**
   * Zero-copy import of the file (weights.ts) where the GPU shares host memory and the driver can
   * import it; upload to device-local memory otherwise (on a discrete GPU imported memory would be
   * read across PCIe every token). --vk-weights / Q36_VK_WEIGHTS overrides.
   */
  private weightMode(): WeightMode {
    const want = this.options.vkWeights ?? (process.env.Q36_VK_WEIGHTS as EngineOptions['vkWeights']) ?? 'auto';
    if (!['auto', 'import', 'upload'].includes(want)) throw new Error(`Q36_VK_WEIGHTS must be auto, import or upload (got "${want}")`);
    const canImport = this.info.externalMemoryHost && this.info.importAlignment > 0;
    if (want === 'import' && !canImport) throw new Error(`--vk-weights import: ${this.info.name} does not support VK_EXT_external_memory_host`);
    if (want === 'auto') return canImport && this.info.unifiedMemory ? 'import' : 'upload';
    return want;
  }

  /** Refuses, with numbers, a configuration that cannot fit the device. */
  private checkBudget(mode: WeightMode): void {
    const info = this.info;
    if (!info.subgroupOps) throw new Error(`${info.name}: the Vulkan backend needs subgroup arithmetic and vote operations in compute shaders (Vulkan 1.1 subgroup features); this device does not report them (use --cpu)`);
    // router.comp keeps a token's expert logits in one subgroup's registers, 32 per lane
    if (this.shape.nExpert > 32 * info.subgroupSize) throw new Error(`${info.name}: ${this.shape.nExpert} experts exceed the router's 32 per subgroup lane (subgroup size ${info.subgroupSize})`);
    // imported weights live in the page cache, not in device allocations
    const w = copiedBytesEstimate(this.file, this.shape, mode);
    const scratch = this.scratchEstimate();
    const total = w + scratch + this.sessionBytes;
    if (total > info.deviceLocalBytes * 0.95) {
      throw new Error(`model does not fit ${info.name}: weights ${(w / 2 ** 30).toFixed(2)} GiB + KV/state ${(this.sessionBytes / 2 ** 30).toFixed(2)} GiB (ctx ${this.options.ctx}) + scratch ${(scratch / 2 ** 30).toFixed(2)} GiB > ${(info.deviceLocalBytes / 2 ** 30).toFixed(2)} GiB device memory: lower --ctx or use -ctk q8_0 -ctv q4_0`);
    }
  }

  private scratchEstimate(): number {
    const s = this.shape, T = this.chunk, st = stateSizes(s);
    const K = s.nExpertUsed;
    return 4 * (T * s.nEmbd * 4 + T * Math.max(st.convCh, 2 * s.nHead * s.headDim) + T * s.ssmInner * 2 + T * s.ssmVHeads * 2 + T * st.kvDim * 2 +
      attnPartialFloats(s, T, this.options.ctx) * (1 + 2 / s.headDim) + T * s.nExpert + 2 * T * K + 2 * T * K * s.nFfExp + T * K * s.nEmbd + 2 * T * s.nFfShexp + T * s.nEmbd + T + this.logitsRows * s.nVocab) + 64;
  }

  /** Loads the weights; an automatic import that the driver refuses falls back to upload. */
  private loadWeights(mode: WeightMode): void {
    const load = (m: WeightMode) => {
      const w = new VkWeights({ dev: this.dev, file: this.file, fd: this.fd, shape: this.shape, q: this.q, mode: m, maxBinding: this.maxBinding() });
      try { w.load(); } catch (e) { w.free(); throw e; }
      return w;
    };
    try {
      this.w = load(mode);
    } catch (e) {
      const auto = (this.options.vkWeights ?? process.env.Q36_VK_WEIGHTS ?? 'auto') === 'auto';
      if (mode !== 'import' || !auto || !/importFile|external|mmap/i.test((e as Error).message)) throw e;
      this.importError = (e as Error).message;
      this.w = load('upload');
    }
  }

  /** The largest binding: the device's, or less (vkMaxBinding: tests exercise windowed weights). */
  private maxBinding(): number {
    const m = this.info.maxStorageBufferRange;
    return Math.min(m, this.options.vkMaxBinding ?? m);
  }

  private allocScratch(): void {
    const s = this.shape, T = this.chunk, st = stateSizes(s), K = s.nExpertUsed;
    const f = (name: string, floats: number, host = false) => {
      if (floats * 4 > this.info.maxStorageBufferRange) {
        throw new Error(`scratch buffer ${name} (${(floats * 4 / 2 ** 20).toFixed(0)} MiB for ${T}-token steps at ctx ${this.options.ctx}) exceeds this device's largest binding (${(this.info.maxStorageBufferRange / 2 ** 20).toFixed(0)} MiB): lower --ctx or the prefill chunk`);
      }
      this.buf[name] = this.dev.createBuffer(Math.max(4, floats * 4), host);
      this.scratchBytes += floats * 4;
    };
    // host-written step inputs (embeddings, parameters) land in small host-visible buffers and
    // step_in.comp copies them to device-local X and PARAMS; LOGITS is host-visible (read in
    // place) only where host-visible memory is the device's own (unified memory): on a discrete
    // GPU the output matvec would write it across PCIe every step, and most steps never read it
    // (greedy and top-k sampling read ARG/TKH)
    const unified = this.info.unifiedMemory;
    f('XIN', T * s.nEmbd, true);
    f('X', T * s.nEmbd);
    f('A', T * s.nEmbd); f('A2', T * s.nEmbd);
    f('QG', T * 2 * s.nHead * s.headDim); f('Kb', T * st.kvDim); f('Vb', T * st.kvDim);
    f('U', T * st.convCh); f('Z', T * s.ssmInner); f('B', T * s.ssmVHeads); f('AL', T * s.ssmVHeads);
    f('O', T * Math.max(s.nHead * s.headDim, s.ssmInner));
    f('P', attnPartialFloats(s, T, this.options.ctx));
    // attn_flash's per-block (max, sum) pairs
    f('ML', 2 * Math.max(...[1, T].map((t) => t * s.nHead * Math.ceil(this.options.ctx / attnBlock(s, t)))));
    f('R', T * s.nExpert); f('IDS', T * K); f('WTS', T * K);
    // the workgroup counter of matvec epilogues (each resets it when done): starts at zero
    f('CNT', 1);
    this.dev.write(this.buf.CNT, 0, new Uint8Array(4));
    f('GE', T * K * s.nFfExp); f('UE', T * K * s.nFfExp); f('DE', T * K * s.nEmbd);
    f('GS', T * s.nFfShexp); f('US', T * s.nFfShexp); f('DS', T * s.nEmbd); f('SG', T);
    // the decode output of every stack, and views of it at each part's rows (one view per distinct
    // range: the layers' stacks of one kind share theirs)
    f('STK', Math.max(1, ...[...this.w.stacks.values()].map((st) => st.w.rows)));
    const views = new Map<string, number>();
    for (const st of this.w.stacks.values()) {
      let o = 0;
      st.views = st.parts.map((r) => {
        const k = `${o}:${r}`;
        let v = views.get(k);
        if (v === undefined) { v = this.dev.createView(this.buf.STK, o * 4, r * 4); views.set(k, v); }
        o += r;
        return v;
      });
    }
    f('LOGITS', this.logitsRows * s.nVocab, unified);
    f('PIN', 4, true);
    f('PARAMS', 4);
    f('ARG', 2, true);
    // top-k stages (topk.comp): ping-pong pairs, the last stage's k pairs host-visible
    const tkPairs = Math.ceil(s.nVocab / TOPK_ITEMS) * TOPK_MAX;
    f('TKA', 2 * tkPairs); f('TKB', 2 * tkPairs); f('TKH', 2 * TOPK_MAX, true);
    // RoPE table (cos, sin) per position and frequency, computed in f64
    const half = s.nRot / 2, ctx = this.options.ctx;
    const rope = new Float32Array(ctx * half * 2);
    for (let p = 0; p < ctx; p++) {
      for (let i = 0; i < half; i++) {
        const a = p * Math.pow(s.ropeTheta, (-2 * i) / s.nRot);
        rope[(p * half + i) * 2] = Math.cos(a);
        rope[(p * half + i) * 2 + 1] = Math.sin(a);
      }
    }
    const grid = iq2xxsGrid(this.core);
    this.buf.GRID = this.dev.createBuffer(grid.byteLength, false);
    this.dev.write(this.buf.GRID, 0, grid);
    this.buf.ROPE = this.dev.createBuffer(rope.byteLength, false);
    this.dev.write(this.buf.ROPE, 0, new Uint8Array(rope.buffer));
    const steering = this.options.steering;
    if (steering) {
      const d = steering.directions;
      if (d.length !== s.nLayer * s.nEmbd) throw new Error(`steering directions hold ${d.length} floats, expected ${s.nLayer} × ${s.nEmbd}`);
      this.buf.STEER = this.dev.createBuffer(d.byteLength, false);
      this.dev.write(this.buf.STEER, 0, new Uint8Array(d.buffer, d.byteOffset, d.byteLength));
      f('M', T * s.nEmbd);
    }
  }

  /** Embedding rows of the tokens, dequantized on the host. */
  embed(tokens: number[]): Float32Array {
    const { t, data } = this.embd;
    const fd = this.fd;
    const n = this.shape.nEmbd;
    const out = new Float32Array(tokens.length * n);
    tokens.forEach((id, i) => {
      if (!(id >= 0 && id < this.shape.nVocab)) throw new RangeError(`token id ${id} is outside the vocabulary (0..${this.shape.nVocab - 1})`);
      const row = data ? data.subarray(id * t.rowBytes, (id + 1) * t.rowBytes) : readBytes(fd, t, id * t.rowBytes, t.rowBytes);
      out.set(this.q.dequantize(t.type, row, n), i * n);
    });
    return out;
  }

  matvec(ops: OpList, name: string, x: number, y: number, nRows: number, o: MatvecOpts = {}): void {
    this.matvecOf(ops, this.w.t.get(name)!, name.replace(/^blk\.\d+\./, '').replace(/\.weight$/, ''), x, y, nRows, o);
  }

  /** Decode (one token): the stacked projections of `blk.L.key` as one matvec into STK; the part views, or undefined without a stack. */
  stacked(ops: OpList, l: number, key: string, x: number, barrier = true): number[] | undefined {
    const st = this.w.stacks.get(`blk.${l}.${key}`);
    if (!st) return undefined;
    const route = key === 'router_in' && this.routesInMatvec(l);
    const epilogue = route ? { shader: 'matvec_router' as const, extra: [this.buf.IDS, this.buf.WTS, this.buf.CNT], aux: this.shape.nExpert } : undefined;
    this.matvecOf(ops, st.w, route ? 'router_in+route' : key, x, this.buf.STK, 1, { barrier, epilogue });
    return st.views;
  }

  /**
   * Whether decode routes layer l's token in the last workgroup of its router matvec
   * (matvec_router.comp): when the router stack exists and starts with the router's F32 rows in
   * one binding (always, unless a test caps bindings very low).
   */
  routesInMatvec(l: number): boolean {
    const st = this.w.stacks.get(`blk.${l}.router_in`);
    return !!st && st.w.type === GgmlType.F32 && st.w.windows.length === 1 && st.parts[0] === this.shape.nExpert;
  }

  /**
   * The k best (logit, id) pairs of LOGITS row 0 (the deferred decode row), best first, ties to
   * the lower id: topk.comp stages, recorded once per k, run on demand (only sampling with a
   * temperature needs them). k ≤ TOPK_MAX.
   */
  topK(k: number): Uint32Array {
    let cmd = this.topkCmds.get(k);
    if (cmd === undefined) {
      const ops = new OpList(this.pipes);
      let n = this.shape.nVocab, stage = 0, src = this.buf.TKB, dst = this.buf.TKA;
      for (;;) {
        const groups = Math.ceil(n / TOPK_ITEMS);
        const out = groups === 1 ? this.buf.TKH : dst;
        ops.op('topk', [this.buf.LOGITS, src, out], [n, k, 0, stage], [groups]);
        if (groups === 1) break;
        n = groups * k;
        stage++;
        [src, dst] = [dst, src];
      }
      cmd = this.dev.record(ops.build());
      this.topkCmds.set(k, cmd);
    }
    this.dev.runSync(cmd);
    return new Uint32Array(this.dev.read(this.buf.TKH, 0, 8 * k));
  }

  /** One matvec dispatch per window of the weight (one for most weights), all into the same Y. */
  private matvecOf(ops: OpList, w: DevTensor, label: string, x: number, y: number, nRows: number, o: MatvecOpts): void {
    const expert = w.expertBytes > 0;
    w.windows.forEach((win, i) => {
      matvecOp(ops, {
        type: MATVEC[w.type], buffers: [win.buf, x, y, this.buf.IDS, this.buf.GRID], rows: expert ? w.rows : win.count, n: w.ne0, rowBytes: w.rowBytes, nRows,
        xStride: o.xStride, yStride: o.yStride ?? w.rows, xOffset: o.xOffset, yOffset: expert ? 0 : win.first, flags: (o.flags ?? 0) | (w.glu ? 4 : 0), K: this.shape.nExpertUsed,
        expertBytes: w.expertBytes, e0: expert ? win.first : 0, ne: expert ? win.count : undefined, upBytes: win.upBytes, wOffset: win.wOffset,
        // the windows write disjoint outputs: only the last one needs the barrier
        barrier: i === w.windows.length - 1 ? o.barrier : false, label, epilogue: o.epilogue,
      });
    });
  }

  newSession(): Session {
    return new BaseSession(new VkBackend(this));
  }

  describe(): string {
    const i = this.info;
    const kvTok = kvBytesPerToken(this.shape, this.kv);
    return [
      `backend   vulkan: ${i.name} (${i.type}), ${i.driver}, subgroup ${i.subgroupSize}, ${i.unifiedMemory ? 'unified' : 'discrete'} memory, ${(i.deviceLocalBytes / 2 ** 30).toFixed(1)} GiB device-local`,
      `weights   ${(this.w.copiedBytes / 2 ** 20).toFixed(1)} MiB copied to the device` +
        (this.w.importedBytes ? `, ${(this.w.importedBytes / 2 ** 20).toFixed(1)} MiB of the file bound in place (zero-copy)` : '') +
        (this.importError ? ` (zero-copy import failed: ${this.importError})` : ''),
      `kv cache  ${this.kv.k}/${this.kv.v}: ${kvTok} B/token, ${(kvTok * this.options.ctx / 2 ** 20).toFixed(1)} MiB for ctx ${this.options.ctx}`,
      `deltanet  state ${(recurrentStateBytes(this.shape) / 2 ** 20).toFixed(1)} MiB per session; scratch ${(this.scratchBytes / 2 ** 20).toFixed(1)} MiB`,
    ].join('\n');
  }

  /** Last step's GPU time per shader (ms), largest first; needs vkProfile. */
  profile(): { shader: string; ms: number; count: number }[] {
    const p = this.lastProfile;
    if (!p) return [];
    const agg = new Map<string, { ms: number; count: number }>();
    p.names.forEach((n, i) => { const a = agg.get(n) ?? { ms: 0, count: 0 }; a.ms += (p.ns[i] ?? 0) / 1e6; a.count++; agg.set(n, a); });
    return [...agg].map(([shader, a]) => ({ shader, ...a })).sort((x, y) => y.ms - x.ms);
  }

  sampleWith(logits: Float32Array, o: SampleOptions, rng: number): number {
    this.core.f32(this.logitsPtr, logits.length).set(logits);
    const id = (this.core.x as unknown as SamplerExports).sample(this.logitsPtr, logits.length, o.temperature, o.topK ?? 0, o.topP ?? 1, o.minP ?? 0, rng);
    if (id < 0) throw new Error('sampler: out of WASM memory');
    return id;
  }

  dispose(): void {
    fs.closeSync(this.fd);
    this.dev.dispose();
  }
}

/** Largest k the GPU top-k serves (a larger one reads the whole row); items per topk workgroup. */
export const TOPK_MAX = 64;
const TOPK_ITEMS = 1024;

/**
 * Key positions per attn_flash workgroup: short blocks for one token (parallelism), long for
 * prefill (bounds P), within the shader's 2048 shared scores for the G heads of a KV head.
 */
function attnBlock(s: ModelShape, T: number): number {
  return T === 1 ? 64 : Math.min(512, 2048 / (s.nHead / s.nHeadKv));
}

/** Floats of the attention partial sums P: the larger of the decode and the chunk shapes. */
function attnPartialFloats(s: ModelShape, T: number, ctx: number): number {
  return Math.max(...[1, T].map((t) => t * s.nHead * Math.ceil(ctx / attnBlock(s, t)) * s.headDim));
}

/**
 * Each head's dk × dk DeltaNet state transposed (a fresh copy): between the payload's
 * value-column-major layout and the GPU's key-row-major one (deltanet.comp). Its own inverse.
 */
function transposeHeads(bytes: Uint8Array, dk: number): Uint8Array {
  // a view when the bytes are 4-byte aligned (read-backs are), a copy otherwise (payload slices)
  const src = bytes.byteOffset % 4 === 0 ? new Float32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4) : new Float32Array(bytes.slice().buffer);
  const dst = new Float32Array(src.length);
  for (let h = 0; h < src.length; h += dk * dk) {
    for (let a = 0; a < dk; a++) for (let b = 0; b < dk; b++) dst[h + b * dk + a] = src[h + a * dk + b];
  }
  return new Uint8Array(dst.buffer);
}

/** Per-session device state (KV cache, DeltaNet states) and its recorded steps. */
class VkBackend extends BackendSettings implements SessionBackend {
  private layers: { a: number; b: number }[] = [];
  private steps = new Map<string, number>();
  private stepNames = new Map<number, string[]>();
  private rng: number;
  private freed = false;
  /** our deferred logits row and arg-max, saved by keep() */
  private kept?: { row: Float32Array; arg: Uint32Array };

  constructor(private readonly e: VkEngine) {
    super(e);
    const s = e.shape, st = stateSizes(s);
    for (let l = 0; l < s.nLayer; l++) {
      if (s.recurrent[l]) this.layers.push({ a: e.dev.createBuffer(st.convBytes, false), b: e.dev.createBuffer(st.ssmBytes, false) });
      else this.layers.push({
        a: e.dev.createBuffer(this.ctx * rowBytes(KV_TYPE_IDS[this.kvTypes.k], st.kvDim), false),
        b: e.dev.createBuffer(this.ctx * rowBytes(KV_TYPE_IDS[this.kvTypes.v], st.kvDim), false),
      });
    }
    this.rng = e.core.alloc(8);
  }

  /** Records the forward of T tokens (logits for rows ≥ logitsFrom): mirrors core-as forward(). */
  private record(T: number, logitsFrom: number): number {
    const e = this.e, s = this.shape, st = stateSizes(s), B = e.buf, K = s.nExpertUsed;
    const ops = new OpList(e.pipes);
    const eps = fbits(s.eps);
    const kT = KV_TYPE_IDS[this.kvTypes.k], vT = KV_TYPE_IDS[this.kvTypes.v];
    // one token: stacked projections (one matvec, outputs read through views of STK)
    const dec = T === 1;
    // the residual update still owed to X, applied by the next norm (rmsnorm.comp modes 1 and 2)
    let owed: { mode: number; r: number; sg: number } = { mode: 0, r: B.A2, sg: B.A2 };
    const norm = (weight: number, row0: number, rows: number) => {
      ops.op('rmsnorm', [B.X, B.A, weight, owed.r, B.DE, B.WTS, B.DS, owed.sg], [s.nEmbd, row0, eps, owed.mode, K, 0, 0, 0], [rows]);
      owed = { mode: 0, r: B.A2, sg: B.A2 };
    };
    ops.op('step_in', [B.XIN, B.X, B.PIN, B.PARAMS], [T * s.nEmbd], [Math.ceil((T * s.nEmbd) / 256)]);
    for (let l = 0; l < s.nLayer; l++) {
      const w = (n: string) => e.w.buf(`blk.${l}.${n}`);
      // independent ops are issued back to back without a barrier between them (barrier = false)
      const mv = (n: string, x: number, y: number, rows: number, o: MatvecOpts = {}) => e.matvec(ops, `blk.${l}.${n}`, x, y, rows, o);
      norm(w('attn_norm.weight'), 0, T);
      const { a, b } = this.layers[l];
      if (s.recurrent[l]) {
        const v = dec ? e.stacked(ops, l, 'ssm_in', B.A) : undefined;
        const [U, Z, Bt, AL] = v ?? [B.U, B.Z, B.B, B.AL];
        if (!v) {
          mv('attn_qkv.weight', B.A, U, T, { barrier: false });
          mv('attn_gate.weight', B.A, Z, T, { barrier: false });
          mv('ssm_beta.weight', B.A, Bt, T, { barrier: false });
          mv('ssm_alpha.weight', B.A, AL, T);
        }
        ops.op('ssm_conv', [U, w('ssm_conv1d.weight'), a], [st.convCh, T, s.ssmConv, 0], [Math.ceil(st.convCh / 256)]);
        // the recurrence with the q/k L2 norm and the gated output norm fused in
        ops.op('deltanet', [U, Bt, AL, w('ssm_dt.bias'), w('ssm_a'), b, B.O, Z, w('ssm_norm.weight')], [T, s.ssmHeadDim, s.ssmKHeads, s.ssmVHeads, st.convCh, eps, fbits(1 / Math.sqrt(s.ssmHeadDim)), 0], [s.ssmVHeads]);
        mv('ssm_out.weight', B.O, B.A2, T);
      } else {
        const qStride = 2 * s.nHead * s.headDim;
        const v = dec ? e.stacked(ops, l, 'attn_in', B.A) : undefined;
        const [QG, Kb, Vb] = v ?? [B.QG, B.Kb, B.Vb];
        if (!v) {
          mv('attn_q.weight', B.A, QG, T, { barrier: false });
          mv('attn_k.weight', B.A, Kb, T, { barrier: false });
          mv('attn_v.weight', B.A, Vb, T);
        }
        ops.op('qk_prep', [QG, Kb, w('attn_q_norm.weight'), w('attn_k_norm.weight'), B.ROPE, B.PARAMS], [s.nHead, s.nHeadKv, s.headDim, s.nRot, qStride, st.kvDim, eps, 0], [T, s.nHead + s.nHeadKv]);
        ops.op(`kv_store_${KV_SHADER[this.kvTypes.k]}`, [Kb, Kb, a, a, B.PARAMS], [st.kvDim, rowBytes(kT, st.kvDim)], [T, 1], false);
        ops.op(`kv_store_${KV_SHADER[this.kvTypes.v]}`, [Vb, Vb, b, b, B.PARAMS], [st.kvDim, rowBytes(vT, st.kvDim)], [T, 1]);
        const blk = attnBlock(s, T), nBlk = Math.ceil(this.ctx / blk);
        ops.op(`attn_flash_${KV_SHADER[this.kvTypes.k]}_${KV_SHADER[this.kvTypes.v]}`, [QG, a, b, B.P, B.ML, B.PARAMS],
          [s.nHead, s.nHeadKv, s.headDim, rowBytes(kT, st.kvDim), rowBytes(vT, st.kvDim), qStride, fbits(1 / Math.sqrt(s.headDim)), nBlk, blk, 0, 0, 0], [T, s.nHeadKv, nBlk]);
        ops.op('attn_merge', [B.P, B.ML, QG, B.O, B.PARAMS], [s.nHead, s.headDim, nBlk, qStride, blk, 0, 0, 0], [T, s.nHead]);
        mv('attn_output.weight', B.O, B.A2, T);
      }
      const steer = e.options.steering;
      if (steer && steer.attnScale !== 0) ops.op('steer', [B.A2, B.STEER], [s.nEmbd, l * s.nEmbd, fbits(steer.attnScale), 0], [T]);
      // MoE (the residual add of the attention output is fused into the norm)
      owed = { mode: 1, r: B.A2, sg: B.A2 };
      norm(w('post_attention_norm.weight'), 0, T);
      // shared expert and router logits only need the normed input: issued back to back
      const rv = dec ? e.stacked(ops, l, 'router_in', B.A, false) : undefined;
      const [R, SG] = rv ?? [B.R, B.SG];
      if (!rv) {
        mv('ffn_gate_inp.weight', B.A, R, T, { barrier: false });
        // the shared-expert gate is a 1-row F32 matvec over the same normed input
        mv('ffn_gate_inp_shexp.weight', B.A, SG, T, { yStride: 1, barrier: false });
      }
      if (e.w.t.has(`blk.${l}.ffn_gate_up_shexp.weight`)) {
        mv('ffn_gate_up_shexp.weight', B.A, B.GS, T);
      } else {
        mv('ffn_gate_shexp.weight', B.A, B.GS, T, { barrier: false });
        mv('ffn_up_shexp.weight', B.A, B.US, T);
        ops.op('swiglu', [B.GS, B.US], [T * s.nFfShexp], [Math.ceil((T * s.nFfShexp) / 256)], false);
      }
      // routing: done by the decode router matvec's last workgroup (stacked() says so), else here
      if (!(rv && e.routesInMatvec(l))) ops.op('router', [R, B.IDS, B.WTS], [s.nExpert, K], [T]);
      if (e.w.t.has(`blk.${l}.ffn_gate_up_exps.weight`)) {
        mv('ffn_gate_up_exps.weight', B.A, B.GE, T * K, { flags: 1 });
      } else {
        mv('ffn_gate_exps.weight', B.A, B.GE, T * K, { flags: 1, barrier: false });
        mv('ffn_up_exps.weight', B.A, B.UE, T * K, { flags: 1 });
        ops.op('swiglu', [B.GE, B.UE], [T * K * s.nFfExp], [Math.ceil((T * K * s.nFfExp) / 256)]);
      }
      mv('ffn_down_exps.weight', B.GE, B.DE, T * K, { flags: 3, barrier: false });
      mv('ffn_down_shexp.weight', B.GS, B.DS, T);
      if (steer && steer.ffnScale !== 0) {
        // FFN steering edits the MoE output before the residual add
        ops.op('moe_combine', [B.M, B.DE, B.WTS, B.DS, SG], [s.nEmbd, K, T], [Math.ceil((T * s.nEmbd) / 256)]);
        ops.op('steer', [B.M, B.STEER], [s.nEmbd, l * s.nEmbd, fbits(steer.ffnScale), 0], [T]);
        owed = { mode: 1, r: B.M, sg: B.A2 };
      } else {
        owed = { mode: 2, r: B.A2, sg: SG };
      }
    }
    // rows before logitsFrom are never read again, so their last residual update is skipped
    const n = T - logitsFrom;
    if (n > 0) {
      norm(e.w.buf('output_norm.weight'), logitsFrom, n);
      e.matvec(ops, 'output.weight', B.A, B.LOGITS, n);
      // greedy decoding reads this instead of the logits row (see forward's deferLast)
      const groups = Math.ceil(s.nVocab / 1024);
      ops.op('argmax', [B.LOGITS, B.TKA, B.TKB, B.ARG], [s.nVocab, (n - 1) * s.nVocab, 0, groups], [groups]);
      ops.op('argmax', [B.LOGITS, B.TKA, B.TKB, B.ARG], [s.nVocab, 0, 1, groups], [1]);
    }
    const cmd = e.dev.record(ops.build(), e.options.vkProfile === true);
    this.stepNames.set(cmd, ops.names);
    return cmd;
  }

  async forward(tokens: number[], pos: number, logitsFrom: number, deferLast = false): Promise<Float32Array[]> {
    const e = this.e, s = this.shape, T = tokens.length;
    if (T - logitsFrom > this.logitsRows) throw new Error('too many logits rows for one step');
    // LOGITS and ARG are engine-wide: another session's deferred row is saved before we overwrite it
    if (e.deferredBy && e.deferredBy !== this) e.deferredBy.keep();
    e.deferredBy = undefined;
    this.kept = undefined;
    const key = `${T}:${logitsFrom}`;
    let cmd = this.steps.get(key);
    if (cmd === undefined) { cmd = this.record(T, logitsFrom); this.steps.set(key, cmd); }
    e.dev.write(e.buf.XIN, 0, new Uint8Array(e.embed(tokens).buffer));
    e.dev.write(e.buf.PIN, 0, new Uint8Array(Uint32Array.of(pos, T, 0, 0).buffer));
    const t0 = performance.now();
    await e.dev.run(cmd);
    e.runMs += performance.now() - t0;
    if (e.options.vkProfile) e.lastProfile = { names: this.stepNames.get(cmd)!, ns: e.dev.timings(cmd) };
    const n = T - logitsFrom;
    if (n <= 0) return [];
    // one row left on the device: BaseSession reads it (readLast) or only its arg-max (lastArgmax)
    if (deferLast && n === 1) { e.deferredBy = this; return []; }
    const all = new Float32Array(e.dev.read(e.buf.LOGITS, 0, n * s.nVocab * 4));
    // one row (decode): the read-back copy itself, no second 1 MB copy
    return n === 1 ? [all] : Array.from({ length: n }, (_, i) => all.slice(i * s.nVocab, (i + 1) * s.nVocab));
  }

  /** Saves this session's deferred row and arg-max to host memory (another session is about to run). */
  keep(): void {
    this.kept = { row: this.readLast(), arg: this.readArg() };
  }

  /** ARG of the last step: {arg-max index, flags} (argmax.comp) */
  private readArg(): Uint32Array {
    return new Uint32Array(this.e.dev.read(this.e.buf.ARG, 0, 8));
  }

  readLast(): Float32Array {
    return this.kept?.row ?? new Float32Array(this.e.dev.read(this.e.buf.LOGITS, 0, this.shape.nVocab * 4));
  }

  lastArgmax(): number | undefined {
    const [id, flags] = this.kept?.arg ?? this.readArg();
    return flags !== 0 || id >= this.shape.nVocab ? undefined : id;
  }

  lastTopK(k: number): { ids: number[]; logits: Float32Array } | undefined {
    // a row saved by keep() is on the host already; a NaN row follows the host sampler's rules
    if (this.kept || this.e.deferredBy !== this || !(k > 0 && k <= TOPK_MAX && k < this.shape.nVocab)) return undefined;
    if (this.readArg()[1] !== 0) return undefined;
    const pairs = this.e.topK(k);
    const f = new Float32Array(pairs.buffer);
    const top: [number, number][] = [];
    for (let i = 0; i < k; i++) if (pairs[2 * i + 1] !== 0xffffffff) top.push([pairs[2 * i + 1], f[2 * i]]);
    top.sort((a, b) => a[0] - b[0]);
    return { ids: top.map((x) => x[0]), logits: Float32Array.from(top, (x) => x[1]) };
  }

  readRecurrent(): Uint8Array {
    const s = this.shape, st = stateSizes(s);
    const out = new Uint8Array(s.recurrent.filter(Boolean).length * (st.convBytes + st.ssmBytes));
    let o = 0;
    s.recurrent.forEach((r, l) => {
      if (!r) return;
      out.set(new Uint8Array(this.e.dev.read(this.layers[l].a, 0, st.convBytes)), o); o += st.convBytes;
      out.set(transposeHeads(new Uint8Array(this.e.dev.read(this.layers[l].b, 0, st.ssmBytes)), s.ssmHeadDim), o); o += st.ssmBytes;
    });
    return out;
  }

  writeRecurrent(state: Uint8Array | null): void {
    const s = this.shape, st = stateSizes(s);
    let o = 0;
    s.recurrent.forEach((r, l) => {
      if (!r) return;
      this.e.dev.write(this.layers[l].a, 0, state ? state.subarray(o, o + st.convBytes) : new Uint8Array(st.convBytes));
      this.e.dev.write(this.layers[l].b, 0, state ? transposeHeads(state.subarray(o + st.convBytes, o + st.convBytes + st.ssmBytes), s.ssmHeadDim) : new Uint8Array(st.ssmBytes));
      o += st.convBytes + st.ssmBytes;
    });
  }

  readKv(i: number, n: number): { k: Uint8Array; v: Uint8Array } {
    const st = stateSizes(this.shape), L = this.layers[attentionLayer(this.shape, i)];
    const kb = n * rowBytes(KV_TYPE_IDS[this.kvTypes.k], st.kvDim), vb = n * rowBytes(KV_TYPE_IDS[this.kvTypes.v], st.kvDim);
    return { k: n ? new Uint8Array(this.e.dev.read(L.a, 0, kb)) : new Uint8Array(0), v: n ? new Uint8Array(this.e.dev.read(L.b, 0, vb)) : new Uint8Array(0) };
  }

  writeKv(i: number, k: Uint8Array, v: Uint8Array): void {
    const L = this.layers[attentionLayer(this.shape, i)];
    if (k.byteLength) this.e.dev.write(L.a, 0, k);
    if (v.byteLength) this.e.dev.write(L.b, 0, v);
  }

  seed(seed: number): void {
    new DataView(this.e.core.memory.buffer).setBigUint64(this.rng, BigInt.asUintN(64, BigInt(Math.floor(seed))), true);
  }

  sample(logits: Float32Array, o: SampleOptions): number {
    return this.e.sampleWith(logits, o, this.rng);
  }

  release(): void {
    if (this.freed) return;
    this.freed = true;
    if (this.e.deferredBy === this) this.e.deferredBy = undefined;
    for (const c of this.steps.values()) this.e.dev.freeCommand(c);
    for (const L of this.layers) { this.e.dev.freeBuffer(L.a); this.e.dev.freeBuffer(L.b); }
  }
}
