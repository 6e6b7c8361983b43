/**
 * The Vulkan backend: weights in device buffers, one recorded command sequence per step shape
 * (replayed for every token), the same Session behaviour and payload as the CPU engine (through
 * BaseSession). The forward pass below mirrors core-as/engine/forward.ts op for op.
 */
import * as fs from 'node:fs';
import { GgmlType, readTensorBytes, rowBytes, typeName, type GgufFile, type TensorInfo } from '../../gguf/index.js';
import { Core } from '../../core/wasm.js';
import { QuantKernels } from '../../core/quant.js';
import { requiredTensors, type ModelShape } from '../../model/shape.js';
import type { Tokenizer } from '../../tokenizer/tokenizer.js';
import { loadAddon, type VkDevice } from '../../vk/addon.js';
import { KV_TYPE_IDS, attentionLayer } from '../common.js';
import { openModel } from '../open-model.js';
import { kvBytesPerToken, recurrentStateBytes, stateSizes } from '../payload.js';
import { BackendSettings, BaseSession, type SessionBackend } from '../session-base.js';
import type { Engine, EngineOptions, KvType, SampleOptions, Session } from '../types.js';
import { OpList, PIPELINES, Pipelines, fbits, iq2xxsGrid, matvecOp } from './graph.js';

const MATVEC: Record<number, string> = {
  [GgmlType.F32]: 'f32', [GgmlType.F16]: 'f16', [GgmlType.BF16]: 'bf16', [GgmlType.Q8_0]: 'q8_0', [GgmlType.Q2_K]: 'q2_k',
  [GgmlType.Q4_K]: 'q4_k', [GgmlType.Q5_K]: 'q5_k', [GgmlType.Q6_K]: 'q6_k', [GgmlType.IQ2_XXS]: 'iq2_xxs',
};
const KV_SHADER: Record<KvType, string> = { f32: 'f32', f16: 'f16', q8_0: 'q8_0', q4_0: 'q4_0' };

interface MatvecOpts { flags?: number; xStride?: number; yStride?: number; xOffset?: number; expert?: boolean; barrier?: boolean }

/**
 * A weight on the device; glu: rows are [gate; up] (per expert), see loadGlu(); rowOffset: the
 * weight is rows [rowOffset, rowOffset + rows) of a stacked buffer, see loadStack().
 */
interface DevTensor { buf: number; type: number; rowBytes: number; ne0: number; rows: number; bytes: number; glu?: boolean; rowOffset?: number }

/**
 * A stack: several weights over the same input in one buffer, one matvec for all in decode; parts:
 * each weight's rows, views: where each part's output lies in STK (made in allocScratch).
 */
interface Stack { w: DevTensor; parts: number[]; views: number[] }

/**
 * Projections of one input that decode runs as a single matvec over stacked rows (each dispatch
 * costs several µs on its own, whatever its size); prefill still runs them one by one (over their
 * row ranges of the stack), since its per-token output layout must stay per weight.
 */
const STACKS: { key: string; parts: string[]; layers: 'recurrent' | 'attention' | 'all' }[] = [
  { key: 'ssm_in', parts: ['attn_qkv', 'attn_gate', 'ssm_beta', 'ssm_alpha'], layers: 'recurrent' },
  { key: 'attn_in', parts: ['attn_q', 'attn_k', 'attn_v'], layers: 'attention' },
  { key: 'router_in', parts: ['ffn_gate_inp', 'ffn_gate_inp_shexp'], layers: 'all' },
];

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
  readonly t = new Map<string, DevTensor>();
  /** stacked projections by `blk.L.key` (see STACKS) */
  readonly stacks = new Map<string, Stack>();
  /** engine-wide scratch buffers (one step at a time) */
  readonly buf: Record<string, number> = {};
  private embd: { t: TensorInfo; data?: Uint8Array };
  /** the model file, open for the engine's lifetime (weight uploads, then embedding rows) */
  private readonly fd: number;
  private weightBytes = 0;
  private scratchBytes = 0;
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
      this.checkBudget();
      this.loadWeights();
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

  /** Refuses, with numbers, a configuration that cannot fit the device. */
  private checkBudget(): void {
    const info = this.info;
    if (!info.subgroupOps) throw new Error(`${info.name}: the Vulkan backend needs subgroup arithmetic and vote operations in compute shaders (Vulkan 1.1 subgroup features); this device does not report them (use --cpu)`);
    let w = 0;
    for (const r of requiredTensors(this.shape)) {
      if (r.name === 'token_embd.weight') continue;
      const t = this.file.tensorByName.get(r.name)!;
      w += r.types === 'float' ? t.rows * t.rowElems * 4 : t.nbytes;
      if (t.nbytes > info.maxStorageBufferRange) throw new Error(`${r.name} (${t.nbytes} bytes) exceeds this device's maxStorageBufferRange (${info.maxStorageBufferRange}); windowed binding is not implemented yet`);
    }
    const scratch = this.scratchEstimate();
    const total = w + scratch + this.sessionBytes;
    if (total > info.deviceLocalBytes * 0.95) {
      throw new Error(`model does not fit ${info.name}: weights ${(w / 2 ** 30).toFixed(2)} GiB + KV/state ${(this.sessionBytes / 2 ** 30).toFixed(2)} GiB (ctx ${this.options.ctx}) + scratch ${(scratch / 2 ** 30).toFixed(2)} GiB > ${(info.deviceLocalBytes / 2 ** 30).toFixed(2)} GiB device memory: lower --ctx or use -ctk q8_0 -ctv q4_0`);
    }
  }

  private scratchEstimate(): number {
    const s = this.shape, T = this.chunk, st = stateSizes(s);
    const K = s.nExpertUsed;
    return 4 * (T * s.nEmbd * 3 + T * Math.max(st.convCh, 2 * s.nHead * s.headDim) + T * s.ssmInner * 2 + T * s.ssmVHeads * 2 + T * st.kvDim * 2 +
      T * s.nHead * this.options.ctx + attnPartialFloats(s, T, this.options.ctx) + T * s.nExpert + 2 * T * K + 2 * T * K * s.nFfExp + T * K * s.nEmbd + 2 * T * s.nFfShexp + T * s.nEmbd + T + this.logitsRows * s.nVocab) + 64;
  }

  private upload(name: string, t: TensorInfo, asF32: boolean): DevTensor {
    const fd = this.fd;
    let type = t.type, rb = t.rowBytes;
    const bytes = asF32 ? t.rows * t.rowElems * 4 : t.nbytes;
    const buf = this.dev.createBuffer(bytes, false);
    if (asF32 && t.type !== GgmlType.F32) {
      this.dev.write(buf, 0, this.f32Bytes(t));
      type = GgmlType.F32;
      rb = t.rowElems * 4;
    } else {
      for (let o = 0; o < t.nbytes; o += 64 << 20) this.dev.write(buf, o, readBytes(fd, t, o, Math.min(64 << 20, t.nbytes - o)));
    }
    this.weightBytes += bytes;
    return { buf, type, rowBytes: rb, ne0: t.rowElems, rows: t.rows, bytes };
  }

  /** A float-class tensor's values as F32 bytes (the shaders read norms, routers, conv as F32). */
  private f32Bytes(t: TensorInfo): Uint8Array {
    return new Uint8Array(this.q.dequantize(t.type, readBytes(this.fd, t, 0, t.nbytes), t.rows * t.rowElems).buffer);
  }

  private loadWeights(): void {
    const required = requiredTensors(this.shape);
    const floats = new Set(required.filter((r) => r.types === 'float').map((r) => r.name));
    const glu = new Set<string>();
    for (let l = 0; l < this.shape.nLayer; l++) {
      for (const kind of ['exps', 'shexp']) if (this.loadGlu(l, kind)) glu.add(`blk.${l}.ffn_gate_${kind}.weight`).add(`blk.${l}.ffn_up_${kind}.weight`);
      for (const st of STACKS) {
        if (st.layers !== 'all' && (st.layers === 'recurrent') !== this.shape.recurrent[l]) continue;
        const names = st.parts.map((p) => `blk.${l}.${p}.weight`);
        if (this.loadStack(`blk.${l}.${st.key}`, names, floats)) names.forEach((n) => glu.add(n));
      }
    }
    for (const r of required) {
      if (r.name === 'token_embd.weight' || glu.has(r.name)) continue;
      const t = this.file.tensorByName.get(r.name)!;
      const asF32 = r.types === 'float';
      if (!asF32 && !MATVEC[t.type]) throw new Error(`${r.name}: type ${typeName(t.type)} is not supported by the Vulkan backend yet (use --cpu)`);
      this.t.set(r.name, this.upload(r.name, t, asF32));
    }
  }

  /**
   * Uploads weights of the same type and row length as one buffer of stacked rows (float weights
   * as F32, like upload()). Returns false (uploaded separately then) when they differ, the stack
   * exceeds the largest binding, or a part's output would start off the view alignment.
   */
  private loadStack(key: string, names: string[], floats: Set<string>): boolean {
    const ts = names.map((n) => this.file.tensorByName.get(n));
    if (ts.some((t) => !t)) return false;
    const info = this.info;
    const asF32 = names.map((n) => floats.has(n));
    const types = ts.map((t, i) => (asF32[i] ? GgmlType.F32 : t!.type));
    if (types.some((t) => t !== types[0] || !MATVEC[t]) || ts.some((t) => t!.rowElems !== ts[0]!.rowElems)) return false;
    const rb = rowBytes(types[0], ts[0]!.rowElems);
    const rows = ts.map((t) => t!.rows);
    const total = rows.reduce((a, b) => a + b, 0);
    let start = 0;
    for (const r of rows) {
      if ((start * 4) % info.minStorageBufferOffsetAlignment !== 0) return false;
      start += r;
    }
    if (total * rb > info.maxStorageBufferRange) return false;
    const buf = this.dev.createBuffer(total * rb, false);
    let row = 0;
    ts.forEach((t, i) => {
      const data = asF32[i] && t!.type !== GgmlType.F32 ? this.f32Bytes(t!) : readBytes(this.fd, t!, 0, t!.nbytes);
      this.dev.write(buf, row * rb, data);
      this.t.set(names[i], { buf, type: types[0], rowBytes: rb, ne0: t!.rowElems, rows: t!.rows, bytes: data.byteLength, rowOffset: row });
      row += t!.rows;
    });
    this.weightBytes += total * rb;
    const w: DevTensor = { buf, type: types[0], rowBytes: rb, ne0: ts[0]!.rowElems, rows: total, bytes: total * rb };
    this.stacks.set(key, { w, parts: rows, views: [] });
    return true;
  }

  /**
   * Uploads a layer's gate and up projections (routed experts or shared expert) as one buffer of
   * [gate rows; up rows] per expert, so one fused matvec computes silu(gate·x)·(up·x). Returns false
   * (they are then uploaded separately) when the two differ in type or shape or the pair would
   * exceed the device's largest binding.
   */
  private loadGlu(l: number, kind: string): boolean {
    const g = this.file.tensorByName.get(`blk.${l}.ffn_gate_${kind}.weight`), u = this.file.tensorByName.get(`blk.${l}.ffn_up_${kind}.weight`);
    if (!g || !u || g.type !== u.type || g.rowElems !== u.rowElems || g.rows !== u.rows || !MATVEC[g.type]) return false;
    if (g.nbytes + u.nbytes > this.info.maxStorageBufferRange) return false;
    const experts = kind === 'exps' ? this.shape.nExpert : 1;
    const part = g.nbytes / experts; // one expert's gate (or up) rows
    const buf = this.dev.createBuffer(2 * g.nbytes, false);
    // stage whole experts in ≤ 64 MiB pieces: [gate_e; up_e] for each expert e
    const per = Math.max(1, Math.floor((64 << 20) / (2 * part)));
    for (let e0 = 0; e0 < experts; e0 += per) {
      const n = Math.min(per, experts - e0);
      const stage = new Uint8Array(2 * part * n);
      for (let i = 0; i < n; i++) {
        readTensorBytes(this.fd, g, stage.subarray(2 * part * i, 2 * part * i + part), (e0 + i) * part, part);
        readTensorBytes(this.fd, u, stage.subarray(2 * part * i + part, 2 * part * (i + 1)), (e0 + i) * part, part);
      }
      this.dev.write(buf, 2 * part * e0, stage);
    }
    this.weightBytes += 2 * g.nbytes;
    this.t.set(`blk.${l}.ffn_gate_up_${kind}.weight`, { buf, type: g.type, rowBytes: g.rowBytes, ne0: g.rowElems, rows: 2 * g.rows, bytes: 2 * g.nbytes, glu: true });
    return true;
  }

  private allocScratch(): void {
    const s = this.shape, T = this.chunk, st = stateSizes(s), K = s.nExpertUsed;
    const f = (name: string, floats: number, host = false) => {
      this.buf[name] = this.dev.createBuffer(Math.max(4, floats * 4), host);
      this.scratchBytes += floats * 4;
    };
    f('X', T * s.nEmbd, true);
    f('A', T * s.nEmbd); f('A2', T * s.nEmbd);
    f('QG', T * 2 * s.nHead * s.headDim); f('Kb', T * st.kvDim); f('Vb', T * st.kvDim);
    f('U', T * st.convCh); f('Z', T * s.ssmInner); f('B', T * s.ssmVHeads); f('AL', T * s.ssmVHeads);
    f('O', T * Math.max(s.nHead * s.headDim, s.ssmInner));
    f('S', T * s.nHead * this.options.ctx);
    f('P', attnPartialFloats(s, T, this.options.ctx));
    f('R', T * s.nExpert); f('IDS', T * K); f('WTS', T * K);
    f('GE', T * K * s.nFfExp); f('UE', T * K * s.nFfExp); f('DE', T * K * s.nEmbd);
    f('GS', T * s.nFfShexp); f('US', T * s.nFfShexp); f('DS', T * s.nEmbd); f('SG', T);
    // the decode output of every stack, and views of it at each part's rows (one view per distinct
    // range: the layers' stacks of one kind share theirs)
    f('STK', Math.max(1, ...[...this.stacks.values()].map((st) => st.w.rows)));
    const views = new Map<string, number>();
    for (const st of this.stacks.values()) {
      let o = 0;
      st.views = st.parts.map((r) => {
        const k = `${o}:${r}`;
        let v = views.get(k);
        if (v === undefined) { v = this.dev.createView(this.buf.STK, o * 4, r * 4); views.set(k, v); }
        o += r;
        return v;
      });
    }
    f('LOGITS', this.logitsRows * s.nVocab, true);
    f('PARAMS', 4, true);
    f('ARG', 2, true);
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
    this.matvecOf(ops, this.t.get(name)!, name.replace(/^blk\.\d+\./, '').replace(/\.weight$/, ''), x, y, nRows, o);
  }

  /** Decode (one token): the stacked projections of `blk.L.key` as one matvec into STK; the part views, or undefined without a stack. */
  stacked(ops: OpList, l: number, key: string, x: number, barrier = true): number[] | undefined {
    const st = this.stacks.get(`blk.${l}.${key}`);
    if (!st) return undefined;
    this.matvecOf(ops, st.w, key, x, this.buf.STK, 1, { barrier });
    return st.views;
  }

  private matvecOf(ops: OpList, w: DevTensor, label: string, x: number, y: number, nRows: number, o: MatvecOpts): void {
    // output rows: per expert for routed experts, half of a [gate; up] pair
    const rows = (o.expert ? w.rows / this.shape.nExpert : w.rows) / (w.glu ? 2 : 1);
    matvecOp(ops, {
      type: MATVEC[w.type], buffers: [w.buf, x, y, this.buf.IDS, this.buf.GRID], rows, n: w.ne0, rowBytes: w.rowBytes, nRows,
      xStride: o.xStride, yStride: o.yStride, xOffset: o.xOffset, flags: (o.flags ?? 0) | (w.glu ? 4 : 0), K: this.shape.nExpertUsed,
      expertBytes: o.expert ? (w.glu ? 2 : 1) * rows * w.rowBytes : 0, barrier: o.barrier, wOffset: (w.rowOffset ?? 0) * w.rowBytes, label,
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
      `weights   ${(this.weightBytes / 2 ** 20).toFixed(1)} MiB on the device`,
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

/** Key positions per attn_values workgroup: short blocks for one token (parallelism), long for prefill (bounds P). */
function attnValueBlock(T: number): number {
  return T === 1 ? 64 : 512;
}

/** Floats of the attention partial sums P: the larger of the decode and the chunk shapes. */
function attnPartialFloats(s: ModelShape, T: number, ctx: number): number {
  return Math.max(...[1, T].map((t) => t * s.nHead * Math.ceil(ctx / attnValueBlock(t)) * s.headDim));
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

/** A fresh copy of bytes [start, start+len) of a tensor. */
function readBytes(fd: number, t: TensorInfo, start: number, len: number): Uint8Array {
  const b = new Uint8Array(len);
  readTensorBytes(fd, t, b, start, len);
  return b;
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
    for (let l = 0; l < s.nLayer; l++) {
      const w = (n: string) => e.t.get(`blk.${l}.${n}`)!.buf;
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
        const vBlk = attnValueBlock(T), nBlk = Math.ceil(this.ctx / vBlk);
        ops.op(`attn_scores_${KV_SHADER[this.kvTypes.k]}`, [QG, a, B.S, B.PARAMS], [s.nHead, s.nHeadKv, s.headDim, this.ctx, rowBytes(kT, st.kvDim), qStride, fbits(1 / Math.sqrt(s.headDim)), 0], [T, s.nHead, Math.ceil(this.ctx / 256)]);
        ops.op('attn_softmax', [B.S, B.PARAMS], [s.nHead, this.ctx], [T, s.nHead]);
        ops.op(`attn_values_${KV_SHADER[this.kvTypes.v]}`, [B.S, b, B.P, B.PARAMS], [s.nHead, s.nHeadKv, s.headDim, this.ctx, rowBytes(vT, st.kvDim), nBlk, vBlk, 0], [T, s.nHead, nBlk]);
        ops.op('attn_reduce', [B.P, QG, B.O, B.PARAMS], [s.nHead, s.headDim, nBlk, qStride, vBlk], [T, s.nHead]);
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
      if (e.t.has(`blk.${l}.ffn_gate_up_shexp.weight`)) {
        mv('ffn_gate_up_shexp.weight', B.A, B.GS, T);
      } else {
        mv('ffn_gate_shexp.weight', B.A, B.GS, T, { barrier: false });
        mv('ffn_up_shexp.weight', B.A, B.US, T);
        ops.op('swiglu', [B.GS, B.US], [T * s.nFfShexp], [Math.ceil((T * s.nFfShexp) / 256)], false);
      }
      ops.op('router', [R, B.IDS, B.WTS], [s.nExpert, K], [T]);
      if (e.t.has(`blk.${l}.ffn_gate_up_exps.weight`)) {
        mv('ffn_gate_up_exps.weight', B.A, B.GE, T * K, { flags: 1, expert: true });
      } else {
        mv('ffn_gate_exps.weight', B.A, B.GE, T * K, { flags: 1, expert: true, barrier: false });
        mv('ffn_up_exps.weight', B.A, B.UE, T * K, { flags: 1, expert: true });
        ops.op('swiglu', [B.GE, B.UE], [T * K * s.nFfExp], [Math.ceil((T * K * s.nFfExp) / 256)]);
      }
      mv('ffn_down_exps.weight', B.GE, B.DE, T * K, { flags: 3, expert: true, barrier: false });
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
      norm(e.t.get('output_norm.weight')!.buf, logitsFrom, n);
      e.matvec(ops, 'output.weight', B.A, B.LOGITS, n);
      // greedy decoding reads this instead of the logits row (see forward's deferLast)
      ops.op('argmax', [B.LOGITS, B.ARG], [s.nVocab, (n - 1) * s.nVocab], [1]);
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
    e.dev.write(e.buf.X, 0, new Uint8Array(e.embed(tokens).buffer));
    e.dev.write(e.buf.PARAMS, 0, new Uint8Array(Uint32Array.of(pos, T, 0, 0).buffer));
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
