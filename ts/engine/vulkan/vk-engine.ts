/**
 * The Vulkan engine: the device, the weights (weights.ts), engine-wide scratch buffers
 * (scratch.ts), the matvec recorder over them (matvec-recorder.ts), the top-k helpers, memory
 * budget and report. It is the
 * VkHost (host.ts) sessions see: each session's state (session-state.ts) holds its KV cache and
 * DeltaNet states and records the step (step.ts); BaseSession gives them the same Session
 * behaviour and payload as the CPU engine.
 */
import * as fs from 'node:fs';
import type { GgufFile, TensorInfo } from '../../gguf/index.js';
import { Core } from '../../core/wasm.js';
import { QuantKernels } from '../../core/quant.js';
import type { ModelShape } from '../../model/shape.js';
import type { Tokenizer } from '../../tokenizer/tokenizer.js';
import { loadAddon, type VkDevice } from '../../vk/addon.js';
import { openModel } from '../open-model.js';
import { kvBytesPerToken, recurrentStateBytes, stateSizes } from '../payload.js';
import { BaseSession } from '../session-base.js';
import type { BatchItem, Engine, EngineOptions, KvType, SampleOptions, Session, TokenMask } from '../types.js';
import { VkSessionState } from './session-state.js';
import type { DraftCheckpoints, RecordedStep, VkHost } from './host.js';
import { EngineOutputs } from './outputs.js';
import { MatvecRecorder } from './matvec-recorder.js';
import { VkExpertStream, tilesFor } from './expert-stream.js';
import type { ExpertStats } from '../expert-cache.js';
import { modelIdentity } from '../../model/fingerprint.js';
import { deltanetWalk, deviceProblem, f16Tiles, prefillPath, shapeProblem } from './limits.js';
import { probeSubgroups } from './subgroup-probe.js';
import { mvqChoice } from './features.js';
import { MAX_BATCH_ROWS } from '../defaults.js';
import { BatchSteps } from './batch-step.js';
import { convCheckpoint, type ScratchBuffer } from './scratch.js';
import { describePlan, planMemory, planScratch, plannedBytes, streamedTensors, type MemoryPlan } from './memory-plan.js';
import { OpList, moePairs, Pipelines, TOPK_MAX, gridBlob } from './graph.js';
import { MATVEC, VkWeights, readBytes, type InputProjection, type WeightMode } from './weights.js';
import type { EngineBuffers } from './scratch.js';

export { TOPK_MAX };

interface SamplerExports {
  sample(logits: number, n: number, temp: number, topK: number, topP: number, minP: number, rng: number): number;
}

export class VkEngine implements Engine, VkHost {
  readonly backend = 'vulkan' as const;
  readonly shape: ModelShape;
  readonly tokenizer: Tokenizer;
  readonly file: GgufFile;
  readonly dev: VkDevice;
  readonly pipes: Pipelines;
  /** the device's properties and limits (read once; deviceLocalBytes = vkMemoryLimit when given) */
  readonly info: ReturnType<VkDevice['info']>;
  /** the device's own device-local memory */
  private readonly deviceBytes: number;
  readonly q: QuantKernels;
  readonly core: Core;
  private batches?: BatchSteps;
  /** the weights (see weights.ts: zero-copy import or upload, windows, stacks, fused gate+up) */
  w!: VkWeights;
  /** the products of a step as dispatches over those weights */
  mv!: MatvecRecorder;
  /** the engine-wide output buffers (LOGITS, ARG, TKH, MASK) and who owns them */
  out!: EngineOutputs;
  /** engine-wide scratch buffers (one step at a time) */
  readonly buf = {} as EngineBuffers;
  private embd: { t: TensorInfo; data?: Uint8Array };
  /** the model file, open for the engine's lifetime (weight uploads, then embedding rows) */
  private readonly fd: number;
  private scratchBytes = 0;
  /** why an automatic zero-copy import fell back to upload (for describe()) */
  private importError?: string;
  readonly logitsPtr: number;
  private ranMs = 0;
  /** with vkProfile: GPU time of each dispatch of the last step */
  private lastProfile?: { names: string[]; ns: Float64Array };
  /** the weight types whose one-row products run on mv.comp (options.vkMvTypes), or undefined: none */
  private readonly mvTypes?: Set<string>;
  /** int8 activation levels for the routed experts, and for the dense products too (VkHost.mvq, mvqDense) */
  readonly mvq: boolean;
  readonly mvqDense: boolean;
  /** the tiled prefill matmuls on the matrix units (mmc): on, or why not */
  readonly coopmat: boolean;
  readonly deltanetWalk: 'deltanet_chunk' | 'deltanet_chunk_p16';
  /** the f32 tiles' products in packed f16 (mmh, opt-in) */
  readonly f16: boolean;
  get matrixAttn(): boolean { return this.plan.matrixAttn; }
  private readonly coopmatWhy: string;
  /** what the device was planned to hold (memory-plan.ts): the step sizes below and the expert cache's slots */
  readonly plan: MemoryPlan;
  /** SSD streaming: the slot pool (made by the plan's stream part) */
  stream?: VkExpertStream;
  /** an MTP head's input projection (its steps' input rows are twice the embedding wide) */
  private readonly head?: InputProjection;

  get chunk(): number { return this.plan.chunk; }
  get kv(): { k: KvType; v: KvType } { return this.plan.kv; }
  get logitsRows(): number { return this.plan.logitsRows; }
  get paramWords(): number { return this.plan.paramWords; }
  /** rows a batched decode step takes (1: none; see batchIssue) */
  get batchRows(): number { return this.plan.batchRows; }
  /** why batched steps were asked for and are not available */
  get batchIssue(): string | undefined { return this.plan.batchIssue; }
  /** rows a draft step takes (1: none; see draftIssue) */
  get draftRows(): number { return this.plan.draftRows; }
  /** why draft steps were asked for and are not available */
  get draftIssue(): string | undefined { return this.plan.draftIssue; }

  private paramViews: number[] = [];

  paramRow(i: number): number {
    const bytes = 4 * this.paramWords;
    while (this.paramViews.length <= i) this.paramViews.push(this.dev.createView(this.buf.PARAMS, this.paramViews.length * bytes, bytes));
    return this.paramViews[i];
  }

  private checkpoints = new Map<number, DraftCheckpoints>();

  draftCheckpoints(l: number): DraftCheckpoints {
    let c = this.checkpoints.get(l);
    if (c) return c;
    const s = this.shape, st = stateSizes(s), rows = this.draftRows - 1;
    if (!s.recurrent[l] || rows < 1) throw new Error(`draftCheckpoints: layer ${l} has none`);
    const li = s.recurrent.slice(0, l).filter(Boolean).length;
    // CKC / CKS hold each recurrent layer's rows together (scratch.ts), every part 256-byte aligned
    const cb = 4 * convCheckpoint(s), sb = st.ssmBytes;
    const view = (buf: number, first: number, stride: number, bytes: number) => ({
      all: this.dev.createView(buf, first, rows * stride),
      each: Array.from({ length: rows }, (_, r) => this.dev.createView(buf, first + r * stride, bytes)),
    });
    const conv = view(this.buf.CKC, li * rows * cb, cb, st.convBytes), state = view(this.buf.CKS, li * rows * sb, sb, sb);
    c = { conv: conv.all, state: state.all, convRows: conv.each, stateRows: state.each };
    this.checkpoints.set(l, c);
    return c;
  }

  /**
   * Device memory this engine's plan leaves to others (an MTP head's engine on the same device):
   * the device-local bytes (or vkMemoryLimit) less everything the plan holds.
   */
  get memoryLeft(): number {
    return this.info.deviceLocalBytes - plannedBytes(this.plan);
  }

  /** wall milliseconds spent in dev.run (submit to fence) since the engine opened, for benchmarks */
  get runMs(): number { return this.ranMs; }

  reportRun(ms: number, profile?: { names: string[]; ns: Float64Array }): void {
    this.ranMs += ms;
    if (profile) this.lastProfile = profile;
  }

  /**
   * `opened`: a model read already (an MTP head's one-layer view of its file, mtp-file.ts, with
   * its input projection `head`: the steps then take [normed embedding | normed hidden state]
   * rows, VkSessionState.forwardRows); otherwise options.model is opened.
   */
  constructor(readonly options: EngineOptions, opened?: { file: GgufFile; shape: ModelShape; tokenizer: Tokenizer; head?: InputProjection }) {
    ({ file: this.file, shape: this.shape, tokenizer: this.tokenizer } = opened ?? openModel(options));
    this.head = opened?.head;
    const s = this.shape;
    const shapeIssue = shapeProblem(s);
    if (shapeIssue) throw new Error(`Vulkan backend: ${shapeIssue} (use --cpu)`);
    const known = new Set(Object.values(MATVEC));
    const badMv = options.vkMvTypes?.find((t) => !known.has(t));
    if (badMv !== undefined) throw new Error(`vkMvTypes: "${badMv}" is not a weight type (one of ${[...known].join(', ')})`);
    this.mvTypes = options.vkMvTypes ? new Set(options.vkMvTypes) : undefined;
    this.core = new Core();
    this.q = new QuantKernels(this.core);
    this.logitsPtr = this.core.alloc(s.nVocab * 4);
    const addon = loadAddon();
    this.dev = new addon.Device(options.vkDevice ?? -1);
    this.pipes = new Pipelines(this.dev);
    const info = this.dev.info();
    const limit = options.vkMemoryLimit;
    if (limit !== undefined && !(limit > 0 && limit <= info.deviceLocalBytes)) {
      this.dev.dispose();
      throw new Error(`vkMemoryLimit ${(limit / 2 ** 30).toFixed(2)} GiB is not within ${info.name}'s ${(info.deviceLocalBytes / 2 ** 30).toFixed(2)} GiB of device-local memory`);
    }
    // a memory limit stands in for the device's memory everywhere the engine plans with it
    this.info = limit === undefined ? info : { ...info, deviceLocalBytes: limit };
    this.deviceBytes = info.deviceLocalBytes;
    const mvq = mvqChoice(info, options.vkMvq);
    this.mvq = mvq !== 'none';
    this.mvqDense = mvq === 'all';
    const path = prefillPath(info, { built: addon.shaderNames().includes('mmc_q8_0'), optOut: options.vkCoopmat === false });
    this.coopmat = path.coopmat;
    this.deltanetWalk = deltanetWalk(info);
    const half = f16Tiles(info, { asked: options.vkF16 === true, coopmat: this.coopmat, built: addon.shaderNames().includes('mmh_q8_0') });
    this.f16 = half.f16;
    this.coopmatWhy = this.coopmat ? `matrix units (mmc, attn_mmc: Q and activations as two f16; Q8_0, IQ2_XXS weights and a q8_0, q4_0 or f16 K exact in f16, others as two f16, an f32 K's attention on the f32 tiles; f32 sums; ${info.coopmatShapes.split('; ').length} subgroup shapes listed)`
      : this.f16 ? `packed f16 tiles (mmh: f16 products summed in f16 over 32 values, then in f32; Q36_VK_F16=1): ${path.why}`
      : `f32 tiles (mm): ${path.why}${options.vkF16 ? `; packed f16 asked, not used: ${half.why}` : ''}`;
    let fd = -1;
    try {
      this.checkDevice();
      // memory-plan.ts: what the device holds, decided before anything is allocated
      this.plan = planMemory(this.file, s, options, this.info, { head: this.head, coopmat: this.coopmat });
    } catch (e) {
      this.dev.dispose();
      throw e;
    }
    try {
      this.fd = fd = fs.openSync(options.model, 'r');
      this.loadWeights(this.plan.mode, this.plan.auto);
      this.allocScratch();
      this.out = new EngineOutputs({ dev: this.dev, pipes: this.pipes, buf: this.buf, nVocab: s.nVocab });
      this.mv = new MatvecRecorder({
        w: this.w, buf: this.buf, shape: s, cpuDevice: this.info.type === 'cpu', fixedRows: options.vkMatvecRows, mvTypes: this.mvTypes, mvq: this.mvq, coopmat: this.coopmat, f16: this.f16,
      });
      this.startStreaming();
    } catch (e) {
      this.stream?.free();
      this.dev.dispose();
      if (fd >= 0) fs.closeSync(fd);
      throw e;
    }
    const et = this.file.tensorByName.get('token_embd.weight')!;
    this.embd = { t: et, data: et.nbytes <= 256 << 20 ? readBytes(this.fd, et, 0, et.nbytes) : undefined };
  }

  /** Refuses a device the kernels cannot run on, or whose subgroups do not run as it reports them. */
  private checkDevice(): void {
    const info = this.info;
    const devIssue = deviceProblem(info, this.shape);
    if (devIssue) throw new Error(`${info.name}: ${devIssue} (use --cpu)`);
    const sg = probeSubgroups(this.dev, this.pipes);
    if (sg.problem) throw new Error(`${info.name}: its subgroups do not run as it reports them (${sg.problem}), so the kernels would compute something else${/llvmpipe/i.test(info.name) ? ' (lavapipe runs at most 16 lanes: LP_NATIVE_VECTOR_WIDTH above 512 is not supported)' : ''} (use --cpu)`);
  }

  /** The slot pool, the streamed experts' views of it, and the warm start (after the weights: the plan knows their size). */
  private startStreaming(): void {
    const p = this.plan.stream;
    if (!p) return;
    const u = this.options.expertUsage;
    this.stream = new VkExpertStream({
      dev: this.dev, file: this.file, fd: this.fd, shape: this.shape, slots: p.slots, layout: p.layout, fullLayers: p.fullLayers, maxBinding: this.maxBinding(),
      direct: this.options.vkStreamDirect ?? this.info.unifiedMemory,
      usage: u && { ...u, model: modelIdentity(this.options.model).fingerprint.toString('hex') },
    });
    this.stream.install(this.w.t);
  }

  /** What opening still has to do asynchronously: the SSD-streaming warm start's reads. */
  async ready(): Promise<void> {
    await this.stream?.warm();
  }

  streams(l: number): boolean {
    return this.stream?.streams(l) ?? false;
  }

  async runStep(step: RecordedStep, T: number): Promise<void> {
    const t0 = performance.now();
    for (let i = 0; i < step.cmds.length; i++) {
      // a streamed decode step's segments are one layer each (~0.1 ms of GPU work on an H200):
      // run on this thread, they skip the worker-thread round trip an async run costs each; the
      // reads of missing experts still yield, and a prefill's long segments run async
      if (step.cmds.length > 1 && T === 1) this.dev.runSync(step.cmds[i]);
      else await this.dev.run(step.cmds[i]);
      if (step.layers[i] >= 0) await this.loadRouted(step.layers[i], T);
    }
    this.reportRun(performance.now() - t0, this.options.vkProfile ? { names: step.names.flat(), ns: Float64Array.from(step.cmds.flatMap((c) => [...this.dev.timings(c)])) } : undefined);
  }

  /**
   * Between a streamed layer's routing and its experts: the T·K routed ids become slot ids (the
   * missing experts read into slots first) and, for several tokens, the pairs grouped by slot.
   */
  private async loadRouted(l: number, T: number): Promise<void> {
    const B = this.buf, n = T * this.shape.nExpertUsed;
    const slots = await this.stream!.slotsFor(l, new Uint32Array(this.dev.read(B.IDS, 0, 4 * n)), T > 1);
    this.dev.write(B.IDS, 0, new Uint8Array(slots.buffer));
    if (T > 1) {
      const { list, tiles } = tilesFor(slots, moePairs(this.coopmat));
      this.dev.write(B.LIST, 0, new Uint8Array(list.buffer));
      this.dev.write(B.TILES, 0, new Uint8Array(tiles.buffer));
    }
  }

  /** Expert-cache counters (SSD streaming), or undefined when every expert is resident. */
  expertStats(): ExpertStats | undefined {
    return this.stream && { ...this.stream.cache.stats };
  }

  /** The scratch buffers (scratch.ts): the budget counts exactly what allocScratch creates. */
  private scratch(): ScratchBuffer[] {
    return planScratch(this.shape, this.options, this.info, this.plan);
  }

  /** Loads the weights; an automatic import that the driver refuses falls back to upload. */
  private loadWeights(mode: WeightMode, auto: boolean): void {
    const load = (m: WeightMode) => {
      const w = new VkWeights({ dev: this.dev, file: this.file, fd: this.fd, shape: this.shape, q: this.q, mode: m, maxBinding: this.maxBinding(), skip: this.plan.stream && streamedTensors(this.plan.stream.fullLayers), head: this.head });
      try { w.load(); } catch (e) { w.free(); throw e; }
      return w;
    };
    try {
      this.w = load(mode);
    } catch (e) {
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
    const s = this.shape, T = this.chunk, table = this.scratch();
    for (const b of table) {
      if (b.floats * 4 > this.info.maxStorageBufferRange) {
        throw new Error(`scratch buffer ${b.name} (${(b.floats * 4 / 2 ** 20).toFixed(0)} MiB for ${T}-token steps at ctx ${this.options.ctx}) exceeds this device's largest binding (${(this.info.maxStorageBufferRange / 2 ** 20).toFixed(0)} MiB): lower --ctx or the prefill chunk`);
      }
      this.buf[b.name] = this.dev.createBuffer(Math.max(4, b.floats * 4), b.host === true);
      this.scratchBytes += Math.max(4, b.floats * 4);
    }
    // the matvec epilogues' workgroup counters start at zero
    this.dev.write(this.buf.CNT, 0, new Uint8Array(4 * table.find((b) => b.name === 'CNT')!.floats));
    // no grammar mask until a step asks for one
    this.dev.write(this.buf.MASK, 0, new Uint8Array(4));
    // views of STK at each stack part's rows (one view per distinct range: the layers' stacks of
    // one kind share theirs)
    const views = new Map<string, number>();
    for (const st of this.w.stacks.values()) {
      if (st.w.rows > table.find((b) => b.name === 'STK')!.floats) throw new Error(`a stack of ${st.w.rows} rows exceeds the STK scratch buffer`);
      let o = 0;
      st.views = st.parts.map((r) => {
        const k = `${o}:${r}`;
        let v = views.get(k);
        if (v === undefined) { v = this.dev.createView(this.buf.STK, o * 4, r * 4); views.set(k, v); }
        o += r;
        return v;
      });
    }
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
    const grid = gridBlob(this.core);
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
    }
  }

  /** Embedding rows of the tokens, dequantized on the host. */
  embed(tokens: number[]): Float32Array {
    const out = new Float32Array(tokens.length * this.shape.nEmbd);
    this.embedInto(tokens, out);
    return out;
  }

  embedInto(tokens: number[], dst: Float32Array): void {
    const { t, data } = this.embd;
    const n = this.shape.nEmbd;
    if (dst.length < tokens.length * n) throw new RangeError(`embedInto: ${dst.length} floats hold fewer than ${tokens.length} rows of ${n}`);
    // every id checked before any row is written (the step input stays whole on a refusal)
    for (const id of tokens) if (!(id >= 0 && id < this.shape.nVocab)) throw new RangeError(`token id ${id} is outside the vocabulary (0..${this.shape.nVocab - 1})`);
    tokens.forEach((id, i) => {
      const row = data ? data.subarray(id * t.rowBytes, (id + 1) * t.rowBytes) : readBytes(this.fd, t, id * t.rowBytes, t.rowBytes);
      this.q.dequantizeInto(t.type, row, dst.subarray(i * n, (i + 1) * n));
    });
  }

  /**
   * The step input rows (XIN) as floats, written in place: the host-visible buffer's own memory,
   * so a prompt's embedding rows are decoded straight into it (no 16 MB array and copy a step).
   */
  stepInput(rows: number): Float32Array {
    // (the view is over the device's memory: after dispose() it would point at freed memory)
    if (this.disposed) throw new Error('Vulkan device is disposed');
    this.xin ??= new Float32Array(this.dev.mapped(this.buf.XIN));
    return this.xin.subarray(0, rows * this.shape.nEmbd);
  }

  private xin?: Float32Array;

  /**
   * Decodes the rows of the next step's tokens into a host array while a step runs (one for the
   * engine: a later prepare replaces them). Rows depend on the tokens alone, so takePrepared hands
   * them to whichever forward runs exactly these tokens. Never throws: a bad id is refused by the
   * forward that runs it.
   */
  prepareInput(tokens: number[]): void {
    this.prepared = undefined;
    const n = tokens.length * this.shape.nEmbd;
    if (!this.nextIn || this.nextIn.length < n) this.nextIn = new Float32Array(Math.max(n, this.chunk * this.shape.nEmbd));
    const rows = this.nextIn.subarray(0, n);
    try {
      this.embedInto(tokens, rows);
      this.prepared = { tokens, rows };
    } catch {
      // (see above)
    }
  }

  /** the prepared rows when they are tokens' (then no longer held), else undefined */
  takePrepared(tokens: number[]): Float32Array | undefined {
    const p = this.prepared;
    this.prepared = undefined;
    return p && p.tokens.length === tokens.length && p.tokens.every((t, i) => t === tokens[i]) ? p.rows : undefined;
  }

  private nextIn?: Float32Array;
  private prepared?: { tokens: number[]; rows: Float32Array };

  newSession(): Session {
    return new BaseSession(new VkSessionState(this));
  }

  /**
   * One token for each of the items' sessions in one step (batch-step.ts). The sessions must be
   * this engine's, distinct, and have room for a token; evalBatch (batch.ts) checks and updates
   * the sessions around this call.
   */
  async decodeBatch(items: readonly BatchItem[]): Promise<void> {
    if (items.length < 2 || items.length > this.batchRows) throw new RangeError(`a batched step takes 2..${this.batchRows} rows (got ${items.length})${this.batchIssue ? `: ${this.batchIssue}` : ''}`);
    const states = items.map(({ session }) => {
      const b = session instanceof BaseSession ? session.backend : undefined;
      if (!(b instanceof VkSessionState) || !b.belongsTo(this)) throw new Error('decodeBatch: a session of another engine');
      return b;
    });
    if (new Set(states).size !== states.length) throw new Error('decodeBatch: a session appears twice');
    // rows in session order: a set of sessions reuses its recorded step whatever order its
    // tokens arrived in (each row is computed alone: the order changes no result)
    const order = states.map((_, i) => i).sort((x, y) => states[x].id - states[y].id);
    this.batches ??= new BatchSteps(this);
    this.out.setMask(undefined);
    await this.batches.run(order.map((i) => states[i]), order.map((i) => items[i].token), order.map((i) => items[i].session.tokens.length));
  }

  /** A session's buffers are about to be freed: batched steps recorded with them go. */
  forgetSession(id: number): void {
    this.batches?.forget(id);
  }

  describe(): string {
    const i = this.info;
    const kvTok = kvBytesPerToken(this.shape, this.kv);
    return [
      `backend   vulkan: ${i.name} (${i.type}), ${i.driver}, subgroup ${i.subgroupSize}, ${i.unifiedMemory ? 'unified' : 'discrete'} memory, ${(this.deviceBytes / 2 ** 30).toFixed(1)} GiB device-local` +
        (this.options.vkMemoryLimit !== undefined ? `, planning for ${(i.deviceLocalBytes / 2 ** 30).toFixed(2)} GiB (--vk-memory-limit)` : ''),
      `weights   ${(this.w.copiedBytes / 2 ** 20).toFixed(1)} MiB copied to the device` +
        (this.w.importedBytes ? `, ${(this.w.importedBytes / 2 ** 20).toFixed(1)} MiB of the file bound in place (zero-copy)` : '') +
        (this.importError ? ` (zero-copy import failed: ${this.importError})` : ''),
      ...(this.stream ? [this.describeStreaming()] : []),
      describePlan(this.plan, this.info, this.options.sessions ?? 1),
      `kv cache  ${this.kv.k}/${this.kv.v}: ${kvTok} B/token, ${(kvTok * this.options.ctx / 2 ** 20).toFixed(1)} MiB for ctx ${this.options.ctx}`,
      `deltanet  state ${(recurrentStateBytes(this.shape) / 2 ** 20).toFixed(1)} MiB per session; scratch ${(this.scratchBytes / 2 ** 20).toFixed(1)} MiB`,
      // which decode products run over int8 activation levels (mvq): recorded numbers depend on it
      `matvecs   decode over int8 activation levels (mvq): ${this.mvqDense ? 'every product over a norm or the routed SwiGLU' : this.mvq ? 'the routed experts only (Q36_VK_MVQ=experts)' : this.options.vkMvq === false ? 'none (Q36_VK_MVQ=0)' : this.info.integerDot ? 'none: the device emulates the packed int8 dot (f32 matvecs; Q36_VK_MVQ=1 forces it)' : 'none (the device has no packed integer dot products)'}${this.mvq ? (this.info.integerDotAccelerated ? ', packed int8 dot accelerated' : ', packed int8 dot emulated (Q36_VK_MVQ)') : ''}`,
      `prefill   matmuls on ${this.coopmatWhy}`,
      ...((this.options.draftMax ?? 0) > 0 ? [this.draftIssue ? `drafts    not available: ${this.draftIssue} (one token a step)` : `drafts    draft steps of up to ${this.draftRows} rows (a token and ${this.draftRows - 1} drafted)`] : []),
      ...((this.options.batchRows ?? 1) > 1 ? [this.batchIssue ? `batched   not available: ${this.batchIssue} (sessions take turns)` : `batched   decode steps of up to ${this.batchRows} sessions`] : []),
    ].join('\n');
  }

  private describeStreaming(): string {
    const st = this.stream!, p = this.plan.stream!;
    const sizes = st.classes.map((c, i) => `${p.slots[i]} of ${(c.slotBytes / 1024).toFixed(0)} KiB${st.classes.length > 1 ? ` for ${c.layers.length} layer${c.layers.length === 1 ? '' : 's'}` : ''}`).join(', ');
    return `experts   routed experts ${p.fullLayers ? `of layers 0-${p.fullLayers - 1} resident, the rest ` : ''}streamed from the file through ${st.slots} device slots (${sizes}; ${(st.bytes / 2 ** 20).toFixed(1)} MiB, ${st.how})${p.budget !== undefined ? `; planned within the driver's memory budget of ${(p.budget / 2 ** 30).toFixed(2)} GiB (VK_EXT_memory_budget)` : ''}${st.cache.warm ? `; ${st.cache.warm}` : ''}`;
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
    if (this.disposed) return;
    this.disposed = true;
    // the routes this run took join the usage file (a hint for the next warm start: a failure
    // to write it costs only warmth, so it does not fail the shutdown)
    try { this.stream?.cache.saveUsage(); } catch { /* see above */ }
    this.xin = undefined;
    fs.closeSync(this.fd);
    this.dev.dispose();
  }

  private disposed = false;
}
