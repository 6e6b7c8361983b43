/**
 * The CPU reference backend: one WASM core holding the weights (resident or expert-streamed) and
 * the sessions' KV caches and DeltaNet states. Deterministic f32 math; every other path is
 * checked against it.
 */
import { rowBytes, readGguf, type GgufFile } from '../../gguf/index.js';
import { Core } from '../../core/wasm.js';
import { validateModel, type ModelShape } from '../../model/shape.js';
import { Tokenizer } from '../../tokenizer/tokenizer.js';
import { KV_TYPE_IDS, commonPrefix, topLogprobs } from '../common.js';
import { decodePayload, encodePayload, PayloadError, stateSizes } from '../payload.js';
import type { Engine, EngineOptions, EvalOptions, KvType, SampleOptions, Session, Snapshot } from '../types.js';
import { SS } from './layout.js';
import { AbortError } from '../common.js';
import { CpuWeights } from './weights.js';

interface ForwardExports {
  forward(sess: number, pos: number, x: number, T: number, logits: number, logitsFrom: number): number;
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

  constructor(readonly options: EngineOptions) {
    this.file = readGguf(options.model);
    this.shape = validateModel(this.file);
    this.tokenizer = new Tokenizer(this.file);
    const s = this.shape;
    if (!(options.ctx >= 1 && Number.isInteger(options.ctx))) throw new Error(`ctx must be a positive integer, got ${options.ctx}`);
    if (options.ctx > s.contextLength) throw new Error(`ctx ${options.ctx} exceeds the model's context length ${s.contextLength}`);
    this.chunk = options.chunk ?? 64;
    this.kv = options.kvTypes ?? { k: 'f16', v: 'f16' };
    this.core = new Core({ ensureExperts: (l, ids, n) => this.weights.ensureExperts(l, ids, n) });
    this.weights = new CpuWeights(this.core, this.file, s, {
      maxTokens: this.chunk,
      sessionReserve: sessionBytes(s, options.ctx, this.kv.k, this.kv.v) + 4 * s.nEmbd * this.chunk,
      streamExperts: options.streamExperts,
      expertCacheBytes: options.expertCacheMiB !== undefined ? options.expertCacheMiB * 2 ** 20 : undefined,
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
    return new CpuSession(this, this.allocSessionTable());
  }

  describe(): string {
    const s = this.shape;
    const st = stateSizes(s);
    const nAttn = s.recurrent.filter((r) => !r).length;
    const kvTok = nAttn * (rowBytes(KV_TYPE_IDS[this.kv.k], st.kvDim) + rowBytes(KV_TYPE_IDS[this.kv.v], st.kvDim));
    const rec = (s.nLayer - nAttn) * (st.convBytes + st.ssmBytes);
    return [
      `backend   cpu (WASM reference), ${this.weights.describe()}`,
      `kv cache  ${this.kv.k}/${this.kv.v}: ${kvTok} B/token, ${(kvTok * this.options.ctx / 2 ** 20).toFixed(1)} MiB for ctx ${this.options.ctx}`,
      `deltanet  state ${(rec / 2 ** 20).toFixed(1)} MiB per session`,
      `wasm heap ${((this.core.x.heapTop() >>> 0) / 2 ** 20).toFixed(1)} MiB of 4096 MiB`,
    ].join('\n');
  }

  dispose(): void {
    this.weights.close();
  }
}

const EMPTY_LOGITS = new Float32Array(0);

class CpuSession implements Session {
  private toks: number[] = [];
  private last: Float32Array = EMPTY_LOGITS;
  private snaps: Snapshot[] = [];
  private rng: number;
  private disposed = false;
  readonly ctx: number;
  readonly kvTypes: { k: KvType; v: KvType };

  constructor(private readonly e: CpuEngine, private readonly tbl: number) {
    this.ctx = e.options.ctx;
    this.kvTypes = e.kv;
    this.rng = e.core.alloc(8);
    this.seed(0);
    this.reset();
  }

  get tokens(): readonly number[] {
    return this.toks;
  }

  private check(): void {
    if (this.disposed) throw new Error('session is disposed');
  }

  private layerPtrs(l: number): [number, number] {
    const dv = new DataView(this.e.core.memory.buffer);
    return [dv.getUint32(this.tbl + SS.LAYERS + l * 8, true), dv.getUint32(this.tbl + SS.LAYERS + l * 8 + 4, true)];
  }

  /** Zero DeltaNet states, empty timeline. */
  private reset(): void {
    const s = this.e.shape, st = stateSizes(s);
    for (let l = 0; l < s.nLayer; l++) {
      if (!s.recurrent[l]) continue;
      const [a, b] = this.layerPtrs(l);
      this.e.core.u8(a, st.convBytes).fill(0);
      this.e.core.u8(b, st.ssmBytes).fill(0);
    }
    this.toks = [];
    this.last = EMPTY_LOGITS;
  }

  async eval(tokens: readonly number[], o: EvalOptions = {}): Promise<void> {
    this.check();
    if (tokens.length === 0) return;
    if (this.toks.length + tokens.length > this.ctx) throw new Error(`context full: ${this.toks.length} + ${tokens.length} tokens exceed ctx ${this.ctx}`);
    const e = this.e, s = e.shape;
    const interval = e.options.snapshotInterval ?? 512;
    let done = 0;
    while (done < tokens.length) {
      if (o.signal) {
        await new Promise<void>((r) => setImmediate(r)); // let an abort arrive between chunks
        if (o.signal.aborted) throw new AbortError();
      }
      const pos = this.toks.length;
      // chunks end on absolute multiples of the chunk size, so snapshots land on chunk boundaries
      let T = Math.min(e.chunk - (pos % e.chunk), tokens.length - done);
      if (o.onLogits) T = Math.min(T, e.logitsRows);
      const part = tokens.slice(done, done + T);
      e.weights.embed(part, e.xPtr);
      const last = done + T === tokens.length;
      const from = o.onLogits ? 0 : last ? T - 1 : T;
      const rc = e.fx.forward(this.tbl, pos, e.xPtr, T, e.logitsPtr, from);
      if (rc !== 0) throw new Error(`forward failed (${rc})`);
      if (o.onLogits) for (let t = 0; t < T; t++) o.onLogits(e.core.f32(e.logitsPtr + t * s.nVocab * 4, s.nVocab).slice(), pos + t);
      if (last) this.last = e.core.f32(e.logitsPtr + (T - 1 - from) * s.nVocab * 4, s.nVocab).slice();
      this.toks.push(...part);
      done += T;
      o.progress?.(done, tokens.length);
      const end = this.toks.length;
      if (end % interval === 0 && done < tokens.length) this.autoSnapshot();
    }
  }

  /** A snapshot at a chunk boundary, kept for rewinds (bounded count). */
  private autoSnapshot(): void {
    // logits at an interior boundary are not computed; a restore there re-evaluates one token
    this.snaps.push(this.capture(EMPTY_LOGITS));
    const max = this.e.options.maxSnapshots ?? 8;
    while (this.snaps.length > max) this.snaps.splice(1, 1); // keep the oldest (long shared prefixes) and the newest
  }

  private capture(logits: Float32Array): Snapshot {
    const s = this.e.shape, st = stateSizes(s);
    const nRec = s.recurrent.filter(Boolean).length;
    const state = new Uint8Array(nRec * (st.convBytes + st.ssmBytes));
    let o = 0;
    for (let l = 0; l < s.nLayer; l++) {
      if (!s.recurrent[l]) continue;
      const [a, b] = this.layerPtrs(l);
      state.set(this.e.core.u8(a, st.convBytes), o); o += st.convBytes;
      state.set(this.e.core.u8(b, st.ssmBytes), o); o += st.ssmBytes;
    }
    return { pos: this.toks.length, tokens: this.toks.slice(), logits: logits.slice(), state };
  }

  logits(): Float32Array {
    this.check();
    if (this.last.length === 0) throw new Error('no logits: evaluate at least one token first');
    return this.last;
  }

  commonPrefix(tokens: readonly number[]): number {
    return commonPrefix(this.toks, tokens);
  }

  snapshot(): Snapshot {
    this.check();
    return this.capture(this.last);
  }

  restore(snap: Snapshot): void {
    this.check();
    const s = this.e.shape, st = stateSizes(s);
    if (snap.state.byteLength !== s.recurrent.filter(Boolean).length * (st.convBytes + st.ssmBytes)) throw new Error('snapshot belongs to a different model');
    // the KV rows below snap.pos must still be the ones the snapshot saw
    if (commonPrefix(this.toks, snap.tokens) < snap.pos) throw new Error('snapshot does not match this session\'s KV cache (its tokens were overwritten)');
    let o = 0;
    for (let l = 0; l < s.nLayer; l++) {
      if (!s.recurrent[l]) continue;
      const [a, b] = this.layerPtrs(l);
      this.e.core.u8(a, st.convBytes).set(snap.state.subarray(o, o + st.convBytes)); o += st.convBytes;
      this.e.core.u8(b, st.ssmBytes).set(snap.state.subarray(o, o + st.ssmBytes)); o += st.ssmBytes;
    }
    this.toks = snap.tokens.slice();
    this.last = snap.logits.slice();
    this.snaps = this.snaps.filter((x) => x.pos <= snap.pos);
  }

  async rewind(n: number, o: EvalOptions = {}): Promise<void> {
    this.check();
    if (!(n >= 0 && n <= this.toks.length)) throw new RangeError(`cannot rewind to ${n}: the session holds ${this.toks.length} tokens`);
    if (n === this.toks.length) return;
    const target = this.toks.slice(0, n);
    this.snaps = this.snaps.filter((x) => x.pos <= n);
    const best = this.snaps.filter((x) => x.logits.length > 0 || x.pos < n).pop();
    if (best) this.restore(best);
    else this.reset();
    await this.eval(target.slice(this.toks.length), o);
  }

  async sync(tokens: readonly number[], o: EvalOptions = {}): Promise<{ reused: number; evaluated: number }> {
    this.check();
    let L = this.commonPrefix(tokens);
    if (L === tokens.length && L === this.toks.length) return { reused: L, evaluated: 0 };
    // the last token must be evaluated to have its logits: reuse at most tokens.length − 1
    if (L === tokens.length) L--;
    const before = this.toks.length;
    if (L < before) await this.rewind(L);
    const reused = this.toks.length;
    await this.eval(tokens.slice(reused), o);
    return { reused, evaluated: tokens.length - reused };
  }

  savePayload(): Uint8Array {
    this.check();
    const e = this.e, s = e.shape, st = stateSizes(s);
    const n = this.toks.length;
    const kT = KV_TYPE_IDS[this.kvTypes.k], vT = KV_TYPE_IDS[this.kvTypes.v];
    const kRow = rowBytes(kT, st.kvDim), vRow = rowBytes(vT, st.kvDim);
    const kv: { k: Uint8Array; v: Uint8Array }[] = [], recurrent: { conv: Uint8Array; ssm: Uint8Array }[] = [];
    for (let l = 0; l < s.nLayer; l++) {
      const [a, b] = this.layerPtrs(l);
      if (s.recurrent[l]) recurrent.push({ conv: e.core.u8(a, st.convBytes).slice(), ssm: e.core.u8(b, st.ssmBytes).slice() });
      else kv.push({ k: e.core.u8(a, n * kRow).slice(), v: e.core.u8(b, n * vRow).slice() });
    }
    const logits = this.last.length ? this.last : new Float32Array(s.nVocab);
    return encodePayload(s, { ctx: this.ctx, chunk: e.chunk, kType: kT, vType: vT, tokens: this.toks, logits, kv, recurrent });
  }

  loadPayload(payload: Uint8Array): void {
    this.check();
    const e = this.e, s = e.shape, st = stateSizes(s);
    const p = decodePayload(s, payload);
    const kT = KV_TYPE_IDS[this.kvTypes.k], vT = KV_TYPE_IDS[this.kvTypes.v];
    if (p.kType !== kT || p.vType !== vT) {
      const names = (t: number) => Object.entries(KV_TYPE_IDS).find(([, v]) => v === t)?.[0];
      throw new PayloadError(`KV types ${names(p.kType)}/${names(p.vType)} differ from this session's ${this.kvTypes.k}/${this.kvTypes.v} (open the engine with -ctk ${names(p.kType)} -ctv ${names(p.vType)})`);
    }
    if (p.tokens.length > this.ctx) throw new PayloadError(`${p.tokens.length} tokens do not fit this session's ctx ${this.ctx}`);
    let ai = 0, ri = 0;
    for (let l = 0; l < s.nLayer; l++) {
      const [a, b] = this.layerPtrs(l);
      if (s.recurrent[l]) { e.core.u8(a, st.convBytes).set(p.recurrent[ri].conv); e.core.u8(b, st.ssmBytes).set(p.recurrent[ri].ssm); ri++; }
      else { e.core.u8(a, p.kv[ai].k.byteLength).set(p.kv[ai].k); e.core.u8(b, p.kv[ai].v.byteLength).set(p.kv[ai].v); ai++; }
    }
    this.toks = Array.from(p.tokens);
    this.last = p.tokens.length ? p.logits.slice() : EMPTY_LOGITS;
    this.snaps = [];
  }

  seed(seed: number): void {
    const dv = new DataView(this.e.core.memory.buffer);
    dv.setBigUint64(this.rng, BigInt.asUintN(64, BigInt(Math.floor(seed))), true);
  }

  sample(o: SampleOptions): number {
    const e = this.e, lg = this.logits();
    e.core.f32(e.logitsPtr, lg.length).set(lg);
    const id = e.fx.sample(e.logitsPtr, lg.length, o.temperature, o.topK ?? 0, o.topP ?? 1, o.minP ?? 0, this.rng);
    if (id < 0) throw new Error('sampler: out of WASM memory');
    return id;
  }

  topLogprobs(k: number) {
    return topLogprobs(this.logits(), k);
  }

  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    this.e.releaseSessionTable(this.tbl);
  }
}
