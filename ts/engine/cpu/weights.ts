/**
 * Puts a qwen35moe GGUF into the WASM core's linear memory: resident tensors read straight into
 * the WASM buffer with fs.readSync, float-class tensors converted to F32, the tensor table and
 * expert table filled for the forward pass. Routed experts are either all resident (small models)
 * or streamed through an LRU cache of expert slots (the real model: docs/cpu-memory-plan.md).
 */
import * as fs from 'node:fs';
import { ExpertCache, minExpertSlots, type ExpertStats } from '../expert-cache.js';
import { GgmlType, readTensorBytes, type GgufFile, type TensorInfo } from '../../gguf/index.js';
import type { Core } from '../../core/wasm.js';
import { requiredTensors, type ModelShape } from '../../model/shape.js';
import { isRoutedExpert as isExp, layerOf } from '../../model/schema.js';
import { E_ENTRY, GLOBAL_SLOTS, H, LAYER_SLOTS, N_SLOTS, T_ENTRY } from './layout.js';

const WASM_LIMIT = 2 ** 32;
const CHUNK = 1 << 30;
const align64 = (n: number) => Math.ceil(n / 64) * 64;

interface QuantExports {
  dequantRow(t: number, src: number, dst: number, n: number): void;
  embedRows(type: number, rows: number, rowBytes: number, T: number, x: number): void;
  engineConfigure(h: number): number;
}


export interface WeightsOptions {
  maxTokens: number;
  /** bytes reserved for sessions (KV, states, scores) and snapshots' scratch */
  sessionReserve: number;
  /** 'auto': resident when everything fits with room to spare */
  streamExperts?: boolean | 'auto';
  /** expert cache size in bytes when streaming (default: what is left) */
  expertCacheBytes?: number;
  /** ...or in expert slots (--ssd-streaming-cache-experts N) */
  expertCacheSlots?: number;
  /** streaming: the routed experts of layers [0, fullLayers) stay resident (--ssd-streaming-full-layers) */
  fullLayers?: number;
  /** warm start: preload the most used experts recorded in `file` (up to `preload`, else the cache), unless `cold` */
  expertUsage?: { file: string; model: string; preload?: number; cold?: boolean };
}

export type { ExpertStats };

export class CpuWeights {
  readonly hyper: number;
  readonly fd: number;
  readonly residentBytes: number;
  private tensorTable: number;
  private expertTable: number;
  private k: QuantExports;
  private embd: { t: TensorInfo; ptr: number };
  private embRow = 0;
  // expert cache
  readonly streaming: boolean;
  private slotBytes = 0;
  private slotPtrs: number[] = [];
  /** layers whose routed experts are resident while the others stream */
  private fullLayers = 0;
  /** the slots' policy (expert-cache.ts); without streaming, only the routes are counted there */
  private cache?: ExpertCache;
  private usage?: WeightsOptions['expertUsage'];
  private readonly residentStats: ExpertStats;

  constructor(readonly core: Core, readonly file: GgufFile, readonly shape: ModelShape, o: WeightsOptions) {
    this.k = core.x as unknown as QuantExports;
    const s = shape;
    this.fd = fs.openSync(file.path, 'r');
    const req = requiredTensors(s);
    const floatClass = new Set(req.filter((r) => r.types === 'float').map((r) => r.name));
    let expertBytes = 0, denseBytes = 0;
    for (const r of req) {
      const t = file.tensorByName.get(r.name)!;
      if (isExp(r.name)) expertBytes += t.nbytes;
      else denseBytes += floatClass.has(r.name) ? t.rows * t.rowElems * 4 : t.nbytes;
    }
    const embT = file.tensorByName.get('token_embd.weight')!;
    const fitsAll = denseBytes + expertBytes + embT.nbytes + o.sessionReserve < WASM_LIMIT * 0.8;
    this.streaming = o.streamExperts === 'auto' || o.streamExperts === undefined ? !fitsAll : o.streamExperts;
    this.residentStats = { streaming: this.streaming, slots: 0, hits: 0, misses: 0, bytesRead: 0, preloaded: 0, readMs: 0, copyMs: 0 };
    this.fullLayers = this.streaming ? Math.min(o.fullLayers ?? 0, s.nLayer) : 0;
    if (!(Number.isInteger(this.fullLayers) && this.fullLayers >= 0)) throw new Error(`fullLayers must be a whole number of layers (got ${o.fullLayers})`);
    this.usage = o.expertUsage;

    // hyperparameters
    this.hyper = core.alloc(H.BYTES);
    const recurrent = core.alloc(s.nLayer);
    core.u8(recurrent, s.nLayer).set(s.recurrent.map((r) => (r ? 1 : 0)));
    this.tensorTable = core.alloc((s.nLayer + 1) * N_SLOTS * T_ENTRY);
    this.expertTable = core.alloc(s.nLayer * s.nExpert * E_ENTRY);
    core.u8(this.expertTable, s.nLayer * s.nExpert * E_ENTRY).fill(0);
    const dv = new DataView(core.memory.buffer);
    const i32 = (off: number, v: number) => dv.setInt32(this.hyper + off, v, true);
    i32(H.N_LAYER, s.nLayer); i32(H.N_EMBD, s.nEmbd); i32(H.N_VOCAB, s.nVocab); i32(H.N_HEAD, s.nHead);
    i32(H.N_HEAD_KV, s.nHeadKv); i32(H.HEAD_DIM, s.headDim); i32(H.N_ROT, s.nRot); i32(H.SSM_CONV, s.ssmConv);
    i32(H.SSM_HEAD_DIM, s.ssmHeadDim); i32(H.SSM_K_HEADS, s.ssmKHeads); i32(H.SSM_V_HEADS, s.ssmVHeads);
    i32(H.N_EXPERT, s.nExpert); i32(H.N_EXPERT_USED, s.nExpertUsed); i32(H.N_FF_EXP, s.nFfExp); i32(H.N_FF_SHEXP, s.nFfShexp);
    dv.setFloat32(this.hyper + H.EPS, s.eps, true);
    dv.setFloat64(this.hyper + H.ROPE_THETA, s.ropeTheta, true);
    i32(H.MAX_TOKENS, o.maxTokens);
    dv.setUint32(this.hyper + H.RECURRENT, recurrent, true);
    dv.setUint32(this.hyper + H.TENSORS, this.tensorTable, true);
    dv.setUint32(this.hyper + H.EXPERTS, this.expertTable, true);

    // dense tensors (and experts when resident)
    let resident = 0;
    for (const r of req) {
      if (r.name === 'token_embd.weight') continue;
      const t = file.tensorByName.get(r.name)!;
      if (isExp(r.name) && this.streaming && layerOf(r.name) >= this.fullLayers) { this.setEntry(r.name, 0, t.type, t.rowBytes, t.rowElems, t.shape[1]); continue; }
      const asF32 = floatClass.has(r.name) && t.type !== GgmlType.F32;
      const bytes = asF32 ? t.rows * t.rowElems * 4 : t.nbytes;
      const ptr = core.alloc(bytes);
      resident += bytes;
      if (asF32) {
        const tmp = core.alloc(t.nbytes); // converted in place below; the raw copy is scratch
        this.read(t, tmp, 0, t.nbytes);
        this.k.dequantRow(t.type, tmp, ptr, t.rows * t.rowElems);
      } else {
        this.read(t, ptr, 0, t.nbytes);
      }
      const type = asF32 ? GgmlType.F32 : t.type;
      this.setEntry(r.name, ptr, type, asF32 ? t.rowElems * 4 : t.rowBytes, t.rowElems, t.rows / (isExp(r.name) ? t.shape[2] : 1));
      if (isExp(r.name)) this.setResidentExperts(r.name, ptr, t);
    }
    // token embedding: resident for small models, read row by row otherwise
    if (this.streaming) {
      this.embd = { t: embT, ptr: 0 };
      this.embRow = core.alloc(embT.rowBytes * o.maxTokens);
    } else {
      const ptr = core.alloc(embT.nbytes);
      this.read(embT, ptr, 0, embT.nbytes);
      resident += embT.nbytes;
      this.embd = { t: embT, ptr };
    }
    this.residentBytes = resident;
    if (this.k.engineConfigure(this.hyper) !== 0) throw new Error('engine configuration failed');

    if (this.streaming) {
      let slot = 0;
      for (let l = 0; l < s.nLayer; l++) {
        const g = file.tensorByName.get(`blk.${l}.ffn_gate_exps.weight`)!, u = file.tensorByName.get(`blk.${l}.ffn_up_exps.weight`)!, d = file.tensorByName.get(`blk.${l}.ffn_down_exps.weight`)!;
        slot = Math.max(slot, align64(g.nbytes / s.nExpert) + align64(u.nbytes / s.nExpert) + align64(d.nbytes / s.nExpert));
      }
      this.slotBytes = slot;
      const left = WASM_LIMIT - (core.x.heapTop() >>> 0) - o.sessionReserve - (64 << 20);
      const want = o.expertCacheSlots !== undefined ? o.expertCacheSlots * slot : o.expertCacheBytes ?? left;
      const n = Math.min((s.nLayer - this.fullLayers) * s.nExpert, Math.floor(Math.min(want, left) / slot));
      const minSlots = minExpertSlots({ ...s, fullLayers: this.fullLayers, chunk: o.maxTokens });
      if (n < minSlots && want < left) {
        throw new Error(`an expert cache of ${n} slots (${(want / 2 ** 20).toFixed(1)} MiB asked) cannot hold one layer's experts: ` +
          `need ${minSlots} expert slots = ${(minSlots * slot / 2 ** 20).toFixed(1)} MiB (raise --ssd-streaming-cache-experts or --expert-cache-mb)`);
      }
      if (n < minSlots && this.fullLayers > 0) {
        let fullBytes = 0;
        for (let l = 0; l < this.fullLayers; l++) for (const part of ['gate', 'up', 'down']) fullBytes += file.tensorByName.get(`blk.${l}.ffn_${part}_exps.weight`)!.nbytes;
        throw new Error(`--ssd-streaming-full-layers ${this.fullLayers} keeps ${(fullBytes / 2 ** 20).toFixed(1)} MiB of experts resident; what is left holds ${n} expert slots, ` +
          `fewer than one layer's ${minSlots} (${(minSlots * slot / 2 ** 20).toFixed(1)} MiB) that a prefill chunk needs: lower --ssd-streaming-full-layers or --ctx`);
      }
      if (n < minSlots) {
        throw new Error(`not enough WASM memory for the expert cache: ${Math.max(0, Math.floor(left / 2 ** 20))} MiB left after ` +
          `${(resident / 2 ** 20).toFixed(0)} MiB of resident weights and ${(o.sessionReserve / 2 ** 20).toFixed(0)} MiB for the session; ` +
          `need ${minSlots} expert slots = ${(minSlots * slot / 2 ** 20).toFixed(1)} MiB, one layer's experts (raise --expert-cache-mb or --ssd-streaming-cache-experts, lower --ctx, or use q8_0/q4_0 KV)`);
      }
      const base = core.alloc(n * slot);
      for (let i = 0; i < n; i++) this.slotPtrs.push(base + i * slot);
      this.cache = new ExpertCache({
        nLayer: s.nLayer, nExpert: s.nExpert, slots: n, fullLayers: this.fullLayers, usage: this.usage,
        load: (l, e, i) => this.loadExpert(l, e, i),
        evict: (l, e) => this.core.u8(this.expertTable + (l * s.nExpert + e) * E_ENTRY, E_ENTRY).fill(0),
      });
      this.cache.warmStart();
    } else {
      this.residentStats.slots = s.nLayer * s.nExpert;
    }
  }

  get stats(): ExpertStats {
    return this.cache?.stats ?? this.residentStats;
  }

  private read(t: TensorInfo, dst: number, start: number, len: number): void {
    const t0 = performance.now();
    for (let done = 0; done < len;) {
      const n = Math.min(CHUNK, len - done);
      // a fresh view per chunk: WASM memory may have grown since the last one
      try {
        readTensorBytes(this.fd, t, this.core.u8(dst + done, n), start + done, n);
      } catch (e) {
        throw new Error(`${this.file.path}: ${(e as Error).message}`);
      }
      done += n;
    }
    this.stats.bytesRead += len;
    this.stats.readMs += performance.now() - t0;
  }

  private setEntry(name: string, ptr: number, type: number, rb: number, ne0: number, rows: number): void {
    const m = /^blk\.(\d+)\.(.+)$/.exec(name);
    const layer = m ? Number(m[1]) : this.shape.nLayer;
    const slot = m ? LAYER_SLOTS[m[2]] : GLOBAL_SLOTS[name];
    if (slot === undefined) throw new Error(`no table slot for tensor ${name}`);
    const dv = new DataView(this.core.memory.buffer);
    const e = this.tensorTable + (layer * N_SLOTS + slot) * T_ENTRY;
    dv.setUint32(e, ptr, true);
    dv.setInt32(e + 4, type, true);
    dv.setUint32(e + 8, rb, true);
    dv.setInt32(e + 12, ne0, true);
    dv.setInt32(e + 16, rows, true);
  }

  private partIndex(name: string): number {
    return /gate_exps/.test(name) ? 0 : /up_exps/.test(name) ? 1 : 2;
  }

  private setResidentExperts(name: string, ptr: number, t: TensorInfo): void {
    const layer = layerOf(name);
    const per = t.nbytes / this.shape.nExpert;
    const dv = new DataView(this.core.memory.buffer);
    for (let e = 0; e < this.shape.nExpert; e++) {
      dv.setUint32(this.expertTable + (layer * this.shape.nExpert + e) * E_ENTRY + 4 * this.partIndex(name), ptr + e * per, true);
    }
  }

  /** Adds this run's routes to the usage file (streaming with a usage file only). */
  saveUsage(): void {
    this.cache?.saveUsage();
  }

  /** Called from the forward pass (WASM import): makes experts ids[0..n) of `layer` resident. */
  ensureExperts(layer: number, ids: number, n: number): void {
    if (!this.cache) { this.residentStats.hits += n; return; }
    // more experts than one token routes to: a prefill chunk's (transient loads, expert-cache.ts)
    this.cache.ensure(layer, this.core.i32(ids, n), n > this.shape.nExpertUsed);
  }

  /** Reads expert e of `layer` into slot `slot` and points the expert table at it. */
  private loadExpert(layer: number, e: number, slot: number): void {
    const s = this.shape, key = layer * s.nExpert + e;
    let off = this.slotPtrs[slot];
    const dv = new DataView(this.core.memory.buffer);
    ['ffn_gate_exps', 'ffn_up_exps', 'ffn_down_exps'].forEach((part, i) => {
      const t = this.file.tensorByName.get(`blk.${layer}.${part}.weight`)!;
      const per = t.nbytes / s.nExpert;
      this.read(t, off, e * per, per);
      dv.setUint32(this.expertTable + key * E_ENTRY + 4 * i, off, true);
      off += align64(per);
    });
  }

  /** Writes the embeddings of `tokens` into x (T × nEmbd f32). */
  embed(tokens: ArrayLike<number>, x: number): void {
    const { t, ptr } = this.embd;
    const T = tokens.length;
    for (let i = 0; i < T; i++) {
      const id = tokens[i];
      if (!(id >= 0 && id < this.shape.nVocab)) throw new RangeError(`token id ${id} is outside the vocabulary (0..${this.shape.nVocab - 1})`);
    }
    if (ptr) {
      for (let i = 0; i < T; i++) this.k.embedRows(t.type, ptr + tokens[i] * t.rowBytes, t.rowBytes, 1, x + i * this.shape.nEmbd * 4);
      return;
    }
    for (let i = 0; i < T; i++) this.read(t, this.embRow + i * t.rowBytes, tokens[i] * t.rowBytes, t.rowBytes);
    this.k.embedRows(t.type, this.embRow, t.rowBytes, T, x);
  }

  describe(): string {
    const s = this.stats;
    return `weights ${(this.residentBytes / 2 ** 20).toFixed(1)} MiB resident; experts ${s.streaming ? `${this.fullLayers ? `of layers 0-${this.fullLayers - 1} resident, the rest ` : ''}streamed through ${s.slots} cache slots of ${(this.slotBytes / 1024).toFixed(0)} KiB` : 'resident'}${this.cache?.warm ? `; ${this.cache.warm}` : ''}`;
  }

  close(): void {
    fs.closeSync(this.fd);
  }
}
