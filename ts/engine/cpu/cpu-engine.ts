/**
 * The CPU reference backend: one WASM core holding the weights (resident or expert-streamed) and
 * the sessions' KV caches and DeltaNet states. Deterministic f32 math; every other path is
 * checked against it.
 */
import { DEFAULT_CHUNK, DEFAULT_KV } from '../defaults.js';
import { rowBytes, type GgufFile } from '../../gguf/index.js';
import { Core } from '../../core/wasm.js';
import type { ModelShape } from '../../model/shape.js';
import type { Tokenizer } from '../../tokenizer/tokenizer.js';
import { KV_TYPE_IDS, attentionLayer } from '../common.js';
import { openModel } from '../open-model.js';
import { kvBytesPerToken, recurrentStateBytes, stateSizes } from '../payload.js';
import { BackendSettings, BaseSession, type SessionBackend } from '../session-base.js';
import type { Engine, EngineOptions, KvType, SampleOptions, Session } from '../types.js';
import { SS } from './layout.js';
import { CpuWeights } from './weights.js';
import { modelIdentity } from '../../model/fingerprint.js';
import type { ExpertStats } from '../expert-cache.js';

interface ForwardExports {
  forward(sess: number, pos: number, x: number, T: number, logits: number, logitsFrom: number, normFrom: number): number;
  sample(logits: number, n: number, temp: number, topK: number, topP: number, minP: number, rng: number): number;
}

/** Bytes one session needs inside WASM memory. */
export function sessionBytes(s: ModelShape, ctx: number, k: KvType, v: KvType): number {
  const st = stateSizes(s);
  let b = SS.LAYERS + s.nLayer * 8 + 64 + s.nHead * ctx * 4;
  for (const r of s.recurrent) b += r ? st.convBytes + st.ssmBytes + 128 : rowBytes(KV_TYPE_IDS[k], st.kvDim) * ctx + rowBytes(KV_TYPE_IDS[v], st.kvDim) * ctx + 128;
  return b;
}

export class CpuEngine implements Engine {
  readonly backend = 'cpu' as const;
  /** no batched step: batch.ts runs the rows one after another (the deterministic ordered fallback) */
  readonly batchRows = 1;
  readonly shape: ModelShape;
  readonly tokenizer: Tokenizer;
  readonly core: Core;
  readonly weights: CpuWeights;
  readonly chunk: number;
  readonly kv: { k: KvType; v: KvType };
  readonly file: GgufFile;
  readonly fx: ForwardExports;
  /** shared scratch: embeddings of one chunk, logits rows, sampler input */
  readonly xPtr: number;
  readonly logitsPtr: number;
  readonly logitsRows: number;
  readonly steerPtr: number;
  private free: number[] = []; // released session tables, reusable
  private live = 0;

  /** `opened`: a model already read and checked (the MTP head's one-layer view of its file) */
  constructor(readonly options: EngineOptions, opened?: { file: GgufFile; shape: ModelShape; tokenizer: Tokenizer }) {
    ({ file: this.file, shape: this.shape, tokenizer: this.tokenizer } = opened ?? openModel(options));
    const s = this.shape;
    this.chunk = options.chunk ?? DEFAULT_CHUNK.cpu;
    this.kv = options.kvTypes ?? DEFAULT_KV.cpu;
    this.core = new Core({ ensureExperts: (l, ids, n) => this.weights.ensureExperts(l, ids, n) });
    this.weights = new CpuWeights(this.core, this.file, s, {
      maxTokens: this.chunk,
      sessionReserve: sessionBytes(s, options.ctx, this.kv.k, this.kv.v) + 4 * s.nEmbd * this.chunk,
      streamExperts: options.streamExperts,
      expertCacheBytes: options.expertCacheMiB !== undefined ? options.expertCacheMiB * 2 ** 20 : undefined,
      expertCacheSlots: options.expertCacheSlots,
      fullLayers: options.expertFullLayers,
      expertUsage: options.expertUsage && { ...options.expertUsage, model: modelIdentity(options.model).fingerprint.toString('hex') },
    });
    this.fx = this.core.x as unknown as ForwardExports;
    this.xPtr = this.core.alloc(this.chunk * s.nEmbd * 4);
    // all-position logits (test vectors) for whole chunks when that stays small, else row by row
    this.logitsRows = this.chunk * s.nVocab * 4 <= 16 << 20 ? this.chunk : 1;
    this.logitsPtr = this.core.alloc(this.logitsRows * s.nVocab * 4);
    this.steerPtr = 0;
    if (options.steering) {
      const d = options.steering.directions;
      if (d.length !== s.nLayer * s.nEmbd) throw new Error(`steering directions hold ${d.length} floats, expected ${s.nLayer} × ${s.nEmbd}`);
      this.steerPtr = this.core.alloc(d.length * 4);
      this.core.f32(this.steerPtr, d.length).set(d);
    }
  }

  allocSessionTable(): number {
    const reuse = this.free.pop();
    if (reuse !== undefined) return reuse;
    const s = this.shape, st = stateSizes(s), ctx = this.options.ctx;
    const kT = KV_TYPE_IDS[this.kv.k], vT = KV_TYPE_IDS[this.kv.v];
    const tbl = this.core.alloc(SS.LAYERS + s.nLayer * 8);
    const dv = new DataView(this.core.memory.buffer);
    dv.setInt32(tbl + SS.CTX, ctx, true);
    dv.setInt32(tbl + SS.K_TYPE, kT, true);
    dv.setInt32(tbl + SS.V_TYPE, vT, true);
    dv.setUint32(tbl + SS.K_ROW, rowBytes(kT, st.kvDim), true);
    dv.setUint32(tbl + SS.V_ROW, rowBytes(vT, st.kvDim), true);
    const scores = this.core.alloc(s.nHead * ctx * 4);
    new DataView(this.core.memory.buffer).setUint32(tbl + SS.SCORES, scores, true);
    for (let l = 0; l < s.nLayer; l++) {
      const a = s.recurrent[l] ? this.core.alloc(st.convBytes) : this.core.alloc(rowBytes(kT, st.kvDim) * ctx);
      const b = s.recurrent[l] ? this.core.alloc(st.ssmBytes) : this.core.alloc(rowBytes(vT, st.kvDim) * ctx);
      const d = new DataView(this.core.memory.buffer);
      d.setUint32(tbl + SS.LAYERS + l * 8, a, true);
      d.setUint32(tbl + SS.LAYERS + l * 8 + 4, b, true);
    }
    const d = new DataView(this.core.memory.buffer);
    d.setUint32(tbl + SS.STEER, this.steerPtr, true);
    d.setFloat32(tbl + SS.STEER_ATTN, this.options.steering?.attnScale ?? 0, true);
    d.setFloat32(tbl + SS.STEER_FFN, this.options.steering?.ffnScale ?? 0, true);
    return tbl;
  }

  releaseSessionTable(tbl: number): void {
    this.free.push(tbl);
    this.live--;
  }

  newSession(): Session {
    this.live++;
    return new BaseSession(new CpuBackend(this, this.allocSessionTable()));
  }

  expertStats(): ExpertStats | undefined {
    const st = this.weights.stats;
    return st.streaming ? { ...st } : undefined;
  }

  describe(): string {
    const kvTok = kvBytesPerToken(this.shape, this.kv);
    const rec = recurrentStateBytes(this.shape);
    return [
      `backend   cpu (WASM reference), ${this.weights.describe()}`,
      `kv cache  ${this.kv.k}/${this.kv.v}: ${kvTok} B/token, ${(kvTok * this.options.ctx / 2 ** 20).toFixed(1)} MiB for ctx ${this.options.ctx}`,
      `deltanet  state ${(rec / 2 ** 20).toFixed(1)} MiB per session`,
      `wasm heap ${((this.core.x.heapTop() >>> 0) / 2 ** 20).toFixed(1)} MiB of 4096 MiB`,
    ].join('\n');
  }

  dispose(): void {
    // the routes this run took join the usage file (a hint for the next warm start: a failure to
    // write it costs only warmth, so it does not fail the shutdown)
    try { this.weights.saveUsage(); } catch { /* see above */ }
    this.weights.close();
  }
}

/** The CPU primitives behind a session: one session table in WASM memory. */
class CpuBackend extends BackendSettings implements SessionBackend {
  private rng: number;

  constructor(private readonly e: CpuEngine, private readonly tbl: number) {
    super(e);
    this.rng = e.core.alloc(8);
  }

  private layerPtrs(l: number): [number, number] {
    const dv = new DataView(this.e.core.memory.buffer);
    return [dv.getUint32(this.tbl + SS.LAYERS + l * 8, true), dv.getUint32(this.tbl + SS.LAYERS + l * 8 + 4, true)];
  }

  async forward(tokens: number[], pos: number, logitsFrom: number, _defer?: boolean, _mask?: unknown, normFrom = -1): Promise<Float32Array[]> {
    const e = this.e, s = e.shape, T = tokens.length;
    e.weights.embed(tokens, e.xPtr);
    const rc = e.fx.forward(this.tbl, pos, e.xPtr, T, e.logitsPtr, logitsFrom, normFrom);
    if (rc !== 0) throw new Error(`forward failed (${rc})`);
    const rows: Float32Array[] = [];
    this.lastRows = Math.max(0, T - (normFrom >= 0 ? Math.min(normFrom, logitsFrom) : logitsFrom));
    for (let t = 0; t < T - logitsFrom; t++) rows.push(e.core.f32(e.logitsPtr + t * s.nVocab * 4, s.nVocab).slice());
    return rows;
  }

  /** rows of the last forward's logits */
  private lastRows = 0;

  readHidden(): Float32Array {
    const e = this.e;
    return e.core.f32((e.core.x as unknown as { hiddenRows(): number }).hiddenRows(), this.lastRows * e.shape.nEmbd).slice();
  }

  readRecurrent(): Uint8Array {
    const s = this.shape, st = stateSizes(s);
    const out = new Uint8Array(s.recurrent.filter(Boolean).length * (st.convBytes + st.ssmBytes));
    let o = 0;
    for (let l = 0; l < s.nLayer; l++) {
      if (!s.recurrent[l]) continue;
      const [a, b] = this.layerPtrs(l);
      out.set(this.e.core.u8(a, st.convBytes), o); o += st.convBytes;
      out.set(this.e.core.u8(b, st.ssmBytes), o); o += st.ssmBytes;
    }
    return out;
  }

  writeRecurrent(state: Uint8Array | null): void {
    const s = this.shape, st = stateSizes(s);
    let o = 0;
    for (let l = 0; l < s.nLayer; l++) {
      if (!s.recurrent[l]) continue;
      const [a, b] = this.layerPtrs(l);
      if (state) { this.e.core.u8(a, st.convBytes).set(state.subarray(o, o + st.convBytes)); this.e.core.u8(b, st.ssmBytes).set(state.subarray(o + st.convBytes, o + st.convBytes + st.ssmBytes)); }
      else { this.e.core.u8(a, st.convBytes).fill(0); this.e.core.u8(b, st.ssmBytes).fill(0); }
      o += st.convBytes + st.ssmBytes;
    }
  }

  readKv(i: number, n: number): { k: Uint8Array; v: Uint8Array } {
    const st = stateSizes(this.shape);
    const [a, b] = this.layerPtrs(attentionLayer(this.shape, i));
    return {
      k: this.e.core.u8(a, n * rowBytes(KV_TYPE_IDS[this.kvTypes.k], st.kvDim)).slice(),
      v: this.e.core.u8(b, n * rowBytes(KV_TYPE_IDS[this.kvTypes.v], st.kvDim)).slice(),
    };
  }

  writeKv(i: number, k: Uint8Array, v: Uint8Array): void {
    const [a, b] = this.layerPtrs(attentionLayer(this.shape, i));
    this.e.core.u8(a, k.byteLength).set(k);
    this.e.core.u8(b, v.byteLength).set(v);
  }

  seed(seed: number): void {
    new DataView(this.e.core.memory.buffer).setBigUint64(this.rng, BigInt.asUintN(64, BigInt(Math.floor(seed))), true);
  }

  sample(lg: Float32Array, o: SampleOptions): number {
    const e = this.e;
    e.core.f32(e.logitsPtr, lg.length).set(lg);
    const id = e.fx.sample(e.logitsPtr, lg.length, o.temperature, o.topK ?? 0, o.topP ?? 1, o.minP ?? 0, this.rng);
    if (id < 0) throw new Error('sampler: out of WASM memory');
    return id;
  }

  release(): void {
    this.e.releaseSessionTable(this.tbl);
  }
}
