/**
 * Everything a session does that does not depend on the backend: the token timeline, chunking,
 * snapshots and rewind, prefix sync, the payload format, sampling and log-probabilities. A
 * backend supplies the few primitives below (forward a chunk, move state in and out).
 */
import { DEFAULT_SNAPSHOT_INTERVAL, MAX_BATCH_ROWS } from './defaults.js';
import { rowBytes } from '../gguf/index.js';
import type { ModelShape } from '../model/shape.js';
import { AbortError, KV_TYPE_IDS, commonPrefix, firstMax, maskHas, syncKeep, topLogprobs } from './common.js';
import { decodePayload, encodePayload, PayloadError, stateSizes } from './payload.js';
import type { EngineOptions, EvalOptions, HiddenObserver, KvType, SampleOptions, Session, Snapshot, TokenLogprob, TokenMask } from './types.js';

/** how many of the device's best tokens a masked sample looks at before reading the whole row */
const MASK_PROBE = 64;

/** What a backend supplies: its settings (BackendSettings' fields) and these primitives. */
export interface SessionBackend extends BackendSettings {
  /**
   * Runs tokens at positions pos… ; returns logits rows for rows from `logitsFrom` on. With
   * `deferLast` (only asked when a backend has readLast and exactly the last row is wanted) the
   * backend may keep that row on the device and return []: readLast() then reads it, and
   * lastArgmax() gives its arg-max without reading it, until the next forward call.
   */
  forward(tokens: number[], pos: number, logitsFrom: number, deferLast?: boolean, mask?: TokenMask, normFrom?: number): Promise<Float32Array[]>;
  /**
   * While a forward runs on the device: the next forward's tokens, whose input rows the backend
   * may decode now (the host's share of a prompt's next chunk, overlapped with this one's GPU
   * work). A forward of other tokens ignores them. Never throws.
   */
  prepare?(tokens: number[]): void;
  /** the grammar mask the deferred row's arg-max was taken under (lastArgmax is then the masked arg-max) */
  lastMasked?(): TokenMask | undefined;
  /** the deferred row's arg-max among a mask's tokens, taken on the device; undefined when it cannot */
  maskedArgmax?(mask: TokenMask): number | undefined;
  readLast?(): Float32Array;
  /**
   * the rows the last forward normed (after the final norm, nEmbd each): its logits rows, or from
   * row normFrom on when forward was asked for it
   */
  readHidden?(): Float32Array;
  /** the deferred row's arg-max (lowest index on ties), or undefined when it cannot tell (NaN, all −∞) */
  lastArgmax?(): number | undefined;
  /**
   * The deferred row's k best logits with their ids, in ascending id order (the sampler's top-k
   * set: larger first, ties to the lower id), or undefined (k unsupported, NaN in the row).
   * `hint` (default true): later steps compute this k's pairs themselves (a sampler that draws
   * from the top-k every step); false for a one-off look (a grammar's probe).
   */
  lastTopK?(k: number, hint?: boolean): { ids: number[]; logits: Float32Array } | undefined;
  /**
   * A draft step (speculative decoding): tokens at pos… as rows of one step, each computed as its
   * decode step is; each row's arg-max (undefined: NaN). keepDraft(n) follows. Without these,
   * BaseSession runs the rows as one forward (a backend whose several-token forward equals its
   * decode steps: the CPU's) and goes back by its saved state.
   */
  draftStep?(tokens: number[], pos: number, hidden?: boolean): Promise<(number | undefined)[]>;
  /** row i's logits of the pending draft step (backends with their own draft step) */
  draftRow?(i: number): Float32Array;
  /** and its k best, as lastTopK gives them (the whole row stays on the device) */
  draftTopK?(i: number, k: number): { ids: number[]; logits: Float32Array } | undefined;
  /** keeps the first n rows of the last draft step (the state after row n − 1; its row deferred as readLast's) */
  keepDraft?(n: number): void;
  /** DeltaNet conv + recurrent states of all recurrent layers, in layer order */
  readRecurrent(): Uint8Array;
  writeRecurrent(state: Uint8Array | null): void;
  /** K/V rows [0, n) of attention layer number `i` (counting attention layers only) */
  readKv(i: number, n: number): { k: Uint8Array; v: Uint8Array };
  writeKv(i: number, k: Uint8Array, v: Uint8Array): void;
  sample(logits: Float32Array, o: SampleOptions): number;
  seed(seed: number): void;
  release(): void;
}

/**
 * The settings part of a SessionBackend, the same for every backend: taken from its engine.
 * Backends extend this and add the primitives.
 */
export abstract class BackendSettings {
  readonly shape: ModelShape;
  readonly ctx: number;
  readonly chunk: number;
  readonly kvTypes: { k: KvType; v: KvType };
  /** most tokens one forward call can return all-position logits for */
  readonly logitsRows: number;
  /** most rows of a draft step (a token and its drafts) */
  readonly draftRows: number;
  readonly snapshotInterval: number;
  readonly maxSnapshots: number;

  constructor(e: { shape: ModelShape; options: EngineOptions; chunk: number; kv: { k: KvType; v: KvType }; logitsRows: number; draftRows?: number }) {
    this.shape = e.shape;
    this.ctx = e.options.ctx;
    this.chunk = e.chunk;
    this.kvTypes = e.kv;
    this.logitsRows = e.logitsRows;
    // without its own draft step a backend runs the rows as one forward that returns their logits
    this.draftRows = e.draftRows ?? Math.min(MAX_BATCH_ROWS, e.logitsRows, e.chunk);
    this.snapshotInterval = e.options.snapshotInterval ?? DEFAULT_SNAPSHOT_INTERVAL;
    this.maxSnapshots = e.options.maxSnapshots ?? 8;
  }
}

const EMPTY = new Float32Array(0);

export class BaseSession implements Session {
  private toks: number[] = [];
  private last: Float32Array = EMPTY;
  /** the last token's logits are still on the device (forward deferLast): read on first use */
  private lastOnDevice = false;
  private snaps: Snapshot[] = [];
  private disposed = false;

  constructor(private readonly b: SessionBackend) {
    b.seed(0);
    b.writeRecurrent(null);
  }

  get tokens(): readonly number[] { return this.toks; }
  get ctx(): number { return this.b.ctx; }
  get kvTypes() { return this.b.kvTypes; }

  private check(): void {
    if (this.disposed) throw new Error('session is disposed');
    if (this.pending) throw new Error('a draft step is waiting for keepDraft()');
  }

  /** the last evalDraft, until keepDraft: its position and tokens, and (BaseSession's own draft step) the rows' logits and the state before it */
  private pending?: { pos: number; tokens: number[]; rows?: Float32Array[]; state?: Uint8Array };

  get draftRows(): number {
    return this.b.draftRows;
  }

  /** told the hidden state of every row every forward computes (observeHidden) */
  private observer?: HiddenObserver;

  observeHidden(fn: HiddenObserver | undefined): void {
    if (fn && !this.b.readHidden) throw new Error('this backend does not give hidden states');
    this.observer = fn;
  }

  /**
   * A forward of `tokens` at pos, every row's hidden state to the observer when there is one
   * (`hidden`: also when there is none, for the caller's readHidden).
   */
  private async run(tokens: number[], pos: number, from: number, defer = false, mask?: TokenMask, hidden = false): Promise<Float32Array[]> {
    if (!this.observer && !hidden) return this.b.forward(tokens, pos, from, defer, mask);
    const rows = await this.b.forward(tokens, pos, from, defer, mask, 0);
    await this.observer?.(pos, tokens, this.b.readHidden!());
    return rows;
  }

  async evalDraft(tokens: readonly number[]): Promise<(number | undefined)[]> {
    this.check();
    const b = this.b, T = tokens.length, pos = this.toks.length;
    if (!(T >= 1 && T <= b.draftRows)) throw new RangeError(`a draft step takes 1..${b.draftRows} tokens (got ${T})`);
    if (pos + T > b.ctx) throw new Error(`context full: ${pos} + ${T} tokens exceed ctx ${b.ctx}`);
    if (this.lastOnDevice) this.setLast(EMPTY);
    const part = tokens.slice();
    let ids: (number | undefined)[];
    try {
      if (b.draftStep) {
        ids = await b.draftStep(part, pos, !!this.observer);
        this.pending = { pos, tokens: part };
        // every row's: an observer sees the rejected ones too, and follows the tokens that stay
        await this.observer?.(pos, part, b.readHidden!());
      } else {
        // the rows as one forward (the CPU's several-token forward is bit for bit its decode
        // steps'), the state before it kept to go back to an accepted row
        const state = b.readRecurrent();
        const rows = await this.run(part, pos, 0);
        ids = rows.map((r) => firstMax(r));
        this.pending = { pos, tokens: part, rows, state };
      }
    } catch (e) {
      this.invalidate();
      throw e;
    }
    this.toks.push(...part);
    this.evaluatedCount += T;
    return ids;
  }

  async keepDraft(n: number): Promise<void> {
    if (this.disposed) throw new Error('session is disposed');
    const d = this.pending;
    if (!d) throw new Error('keepDraft: no draft step to keep');
    if (!(Number.isInteger(n) && n >= 1 && n <= d.tokens.length)) throw new RangeError(`keepDraft: ${n} of ${d.tokens.length} tokens`);
    this.pending = undefined;
    this.toks.length = d.pos + n;
    try {
      if (this.b.keepDraft) {
        this.b.keepDraft(n);
        this.last = EMPTY;
        this.lastOnDevice = true;
        return;
      }
      if (n < d.tokens.length) {
        // back to the state before the step, then the kept tokens again (no logits needed)
        this.b.writeRecurrent(d.state!);
        await this.run(d.tokens.slice(0, n), d.pos, n);
        this.evaluatedCount += n;
      }
      this.setLast(d.rows![n - 1]);
    } catch (e) {
      this.invalidate();
      throw e;
    }
  }

  sampleDraftRow(i: number, o: SampleOptions, mask?: TokenMask): number {
    if (this.disposed) throw new Error('session is disposed');
    const d = this.pending;
    if (!d) throw new Error('sampleDraftRow: no draft step pending');
    if (!(Number.isInteger(i) && i >= 0 && i < d.tokens.length)) throw new RangeError(`sampleDraftRow: row ${i} of ${d.tokens.length}`);
    // top-k sampling from the device's k best draws what the whole row draws (see sample())
    const k = o.topK ?? 0;
    if (!mask && !d.rows && o.temperature > 0 && k > 0 && k < this.b.shape.nVocab) {
      const top = this.b.draftTopK?.(i, k);
      if (top && top.ids.length === k) return top.ids[this.b.sample(top.logits, o)];
    }
    const row = d.rows?.[i] ?? this.b.draftRow?.(i);
    if (!row) throw new Error('this backend does not give draft rows');
    // the whole row on the host: what sample() draws on every path (its device shortcuts draw the same)
    return mask ? this.sampleAllowed(row, o, mask) : this.b.sample(row, o);
  }

  private reset(): void {
    this.b.writeRecurrent(null);
    this.toks = [];
    this.setLast(EMPTY);
  }

  private setLast(l: Float32Array): void {
    this.last = l;
    this.lastOnDevice = false;
  }

  /** The last token's logits (read back now if they were left on the device), or EMPTY. */
  private current(): Float32Array {
    if (this.lastOnDevice) this.setLast(this.b.readLast!());
    return this.last;
  }

  private evaluatedCount = 0;

  /** Tokens evaluated since the session was made, the re-evaluations of rewinds included. */
  get evaluated(): number {
    return this.evaluatedCount;
  }

  async eval(tokens: readonly number[], o: EvalOptions = {}): Promise<void> {
    this.check();
    if (tokens.length === 0) return;
    if (this.toks.length + tokens.length > this.b.ctx) throw new Error(`context full: ${this.toks.length} + ${tokens.length} tokens exceed ctx ${this.b.ctx}`);
    const b = this.b;
    const every = o.onLogits !== undefined || o.onHidden !== undefined;
    // tokens of the step at pos with `left` to go: chunks end on absolute multiples of the chunk
    // size, so snapshots land on chunk boundaries
    const stepLen = (pos: number, left: number) => Math.min(b.chunk - (pos % b.chunk), left, every ? b.logitsRows : Infinity);
    let done = 0;
    while (done < tokens.length) {
      if (o.signal) {
        await new Promise<void>((r) => setImmediate(r)); // let an abort arrive between chunks
        if (o.signal.aborted) throw new AbortError();
      }
      const pos = this.toks.length;
      const T = stepLen(pos, tokens.length - done);
      const part = tokens.slice(done, done + T);
      const last = done + T === tokens.length;
      const from = every ? 0 : last ? T - 1 : T;
      // greedy decoding never needs the logits on the host: leave them on the device when we can
      const defer = from === T - 1 && !every && b.readLast !== undefined;
      // this forward overwrites logits a backend kept for us: they belonged to an older token
      if (this.lastOnDevice) this.setLast(EMPTY);
      let rows: Float32Array[];
      try {
        const running = this.run(part, pos, from, defer, last ? o.mask : undefined, o.onHidden !== undefined);
        // the next step's input rows, decoded while this one runs
        if (!last && b.prepare) b.prepare(tokens.slice(done + T, done + T + stepLen(pos + T, tokens.length - done - T)));
        rows = await running;
      } catch (e) {
        // a step that failed part-way (a read error on the model file, a device error) may have
        // advanced some layers' state: nothing may continue from it
        this.invalidate();
        throw e;
      }
      this.evaluatedCount += T;
      if (o.onLogits) rows.forEach((r, i) => o.onLogits!(r, pos + i));
      if (o.onHidden) {
        if (!b.readHidden) throw new Error('this backend does not give hidden states (use --cpu)');
        const h = b.readHidden(), n = this.b.shape.nEmbd;
        for (let i = 0; i < T; i++) o.onHidden(h.subarray(i * n, (i + 1) * n), pos + i);
      }
      if (last) {
        if (defer && rows.length === 0) { this.last = EMPTY; this.lastOnDevice = true; }
        else this.setLast(rows[rows.length - 1]);
      }
      this.toks.push(...part);
      done += T;
      o.progress?.(done, tokens.length);
      if (this.toks.length % b.snapshotInterval === 0 && (done < tokens.length || o.continues)) this.autoSnapshot();
    }
  }

  /** The backend (batch.ts hands it to the engine that runs a batched step). */
  get backend(): SessionBackend {
    return this.b;
  }

  /**
   * Before a batched step (batch.ts, which has checked every member's room for the token) gives
   * this session one token: the logits a backend kept for us belong to an older token from here on.
   */
  beforeBatchedToken(): void {
    this.check();
    if (this.lastOnDevice) this.setLast(EMPTY);
  }

  /** After the step: the token is in, its logits are left on the device (readLast/lastArgmax). */
  afterBatchedToken(token: number): void {
    this.toks.push(token);
    this.evaluatedCount++;
    this.last = EMPTY;
    this.lastOnDevice = true;
  }

  /**
   * A failed batched step: whatever part of it reached this session's state, the session goes
   * back to empty — a consistent state (the next request prefills again), never a half-advanced one.
   */
  invalidate(): void {
    if (this.disposed) return;
    this.pending = undefined;
    this.toks = [];
    this.snaps = [];
    this.setLast(EMPTY);
    try { this.b.writeRecurrent(null); } catch { /* the device failed: the empty token list is what counts */ }
  }

  /** A snapshot at a chunk boundary, kept for rewinds (bounded count). Logits are not kept there. */
  private autoSnapshot(): void {
    this.snaps.push(this.capture(EMPTY));
    while (this.snaps.length > this.b.maxSnapshots) this.snaps.splice(1, 1); // keep the oldest and the newest
  }

  private capture(logits: Float32Array): Snapshot {
    return { pos: this.toks.length, tokens: this.toks.slice(), logits: logits.slice(), state: this.b.readRecurrent() };
  }

  logits(): Float32Array {
    this.check();
    const l = this.current();
    if (l.length === 0) throw new Error('no logits: evaluate at least one token first');
    return l;
  }

  commonPrefix(tokens: readonly number[]): number {
    return commonPrefix(this.toks, tokens);
  }

  snapshot(): Snapshot {
    this.check();
    return this.capture(this.current());
  }

  /** Keeps a rewind point at the current position (e.g. where the next request is expected to diverge). */
  checkpoint(): void {
    this.check();
    if (this.snaps.some((x) => x.pos === this.toks.length)) return;
    this.snaps.push(this.capture(this.current()));
    this.snaps.sort((a, b) => a.pos - b.pos);
    while (this.snaps.length > this.b.maxSnapshots) this.snaps.splice(1, 1);
  }

  restore(snap: Snapshot): void {
    this.check();
    const st = stateSizes(this.b.shape);
    if (snap.state.byteLength !== this.b.shape.recurrent.filter(Boolean).length * (st.convBytes + st.ssmBytes)) throw new Error('snapshot belongs to a different model');
    // the KV rows below snap.pos must still be the ones the snapshot saw
    if (commonPrefix(this.toks, snap.tokens) < snap.pos) throw new Error('snapshot does not match this session\'s KV cache (its tokens were overwritten)');
    this.b.writeRecurrent(snap.state);
    this.toks = snap.tokens.slice();
    this.setLast(snap.logits.slice());
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
    const L = syncKeep(this.toks, tokens);
    if (L === tokens.length) return { reused: L, evaluated: 0 };
    if (L < this.toks.length) await this.rewind(L);
    const reused = this.toks.length;
    await this.eval(tokens.slice(reused), o);
    return { reused, evaluated: tokens.length - reused };
  }

  savePayload(): Uint8Array {
    this.check();
    const s = this.b.shape, st = stateSizes(s);
    const n = this.toks.length;
    const kT = KV_TYPE_IDS[this.kvTypes.k], vT = KV_TYPE_IDS[this.kvTypes.v];
    const kv: { k: Uint8Array; v: Uint8Array }[] = [];
    let ai = 0;
    for (let l = 0; l < s.nLayer; l++) if (!s.recurrent[l]) kv.push(this.b.readKv(ai++, n));
    const rec = this.b.readRecurrent();
    const recurrent: { conv: Uint8Array; ssm: Uint8Array }[] = [];
    for (let o = 0; o < rec.byteLength; o += st.convBytes + st.ssmBytes) {
      recurrent.push({ conv: rec.subarray(o, o + st.convBytes), ssm: rec.subarray(o + st.convBytes, o + st.convBytes + st.ssmBytes) });
    }
    const cur = this.current();
    const logits = cur.length ? cur : new Float32Array(s.nVocab);
    return encodePayload(s, { ctx: this.b.ctx, chunk: this.b.chunk, kType: kT, vType: vT, tokens: this.toks, logits, kv, recurrent });
  }

  loadPayload(payload: Uint8Array): void {
    this.check();
    const s = this.b.shape, st = stateSizes(s);
    const p = decodePayload(s, payload);
    const kT = KV_TYPE_IDS[this.kvTypes.k], vT = KV_TYPE_IDS[this.kvTypes.v];
    if (p.kType !== kT || p.vType !== vT) {
      const names = (t: number) => Object.entries(KV_TYPE_IDS).find(([, v]) => v === t)?.[0];
      throw new PayloadError(`KV types ${names(p.kType)}/${names(p.vType)} differ from this session's ${this.kvTypes.k}/${this.kvTypes.v} (open the engine with -ctk ${names(p.kType)} -ctv ${names(p.vType)})`);
    }
    if (p.tokens.length > this.b.ctx) throw new PayloadError(`${p.tokens.length} tokens do not fit this session's ctx ${this.b.ctx}`);
    const kRow = rowBytes(kT, st.kvDim);
    // every check before the first write: a refused payload leaves the session as it was
    if (p.kv.some((l) => l.k.byteLength !== p.tokens.length * kRow)) throw new PayloadError('KV rows have the wrong size');
    p.kv.forEach((l, i) => this.b.writeKv(i, l.k, l.v));
    const rec = new Uint8Array(p.recurrent.length * (st.convBytes + st.ssmBytes));
    p.recurrent.forEach((r, i) => { rec.set(r.conv, i * (st.convBytes + st.ssmBytes)); rec.set(r.ssm, i * (st.convBytes + st.ssmBytes) + st.convBytes); });
    this.b.writeRecurrent(rec);
    this.toks = Array.from(p.tokens);
    this.setLast(p.tokens.length ? p.logits.slice() : EMPTY);
    this.snaps = [];
  }

  seed(seed: number): void {
    this.b.seed(seed);
  }

  sample(o: SampleOptions, mask?: TokenMask): number {
    this.check();
    if (mask) return this.sampleMasked(o, mask);
    // greedy (the WASM sampler's temperature ≤ 0 case: first maximum) from the device's arg-max
    if (this.lastOnDevice && o.temperature <= 0) {
      const id = this.b.lastArgmax?.();
      if (id !== undefined) return id;
    }
    // top-k sampling from the device's k best: the sampler run over just those (in id order, so
    // ties break alike) draws the same token with the same random number as over the whole row —
    // its max, min-p cut, top-k set, order, top-p prefix and weights are all inside the k
    const k = o.topK ?? 0;
    if (this.lastOnDevice && o.temperature > 0 && k > 0 && k < this.b.shape.nVocab) {
      const top = this.b.lastTopK?.(k);
      if (top && top.ids.length === k) return top.ids[this.b.sample(top.logits, o)];
    }
    return this.b.sample(this.logits(), o);
  }

  /**
   * Sampling among a grammar's tokens. The device's arg-max or top-k answers when the grammar
   * allows all of it (then the full row's masked choice is the same token); otherwise the row is
   * read and the sampler runs over the allowed tokens only, in id order (ties break as over the
   * whole row).
   */
  private sampleMasked(o: SampleOptions, mask: TokenMask): number {
    if (mask.count === 0) throw new Error('the grammar allows no token here');
    const has = (id: number) => maskHas(mask, id);
    if (this.lastOnDevice && o.temperature <= 0) {
      // the step took its arg-max under this very mask (eval's `mask`), or it happens to be allowed
      const id = this.b.lastArgmax?.();
      if (id !== undefined && (has(id) || this.b.lastMasked?.() === mask)) return id;
      // the step ran before the mask was known: the arg-max again, under it, on the device
      const m = this.b.maskedArgmax?.(mask);
      if (m !== undefined) return m;
    }
    // the device's best tokens: when enough of them are allowed, the allowed among them hold the
    // masked row's arg-max (and its top-k set), and the 1 MB row stays on the device
    const k = o.topK ?? 0;
    if (this.lastOnDevice && (o.temperature <= 0 || (k > 0 && k <= MASK_PROBE))) {
      // greedy looks once (its steps need no top-k of their own); top-k sampling every step
      const top = this.b.lastTopK?.(MASK_PROBE, o.temperature > 0);
      if (top && top.ids.length === MASK_PROBE) {
        const ids: number[] = [], vals: number[] = [];
        top.ids.forEach((id, i) => { if (has(id)) { ids.push(id); vals.push(top.logits[i]); } });
        if (o.temperature <= 0 && ids.length) return ids[firstMax(vals)];
        if (o.temperature > 0 && ids.length >= k) return ids[this.b.sample(Float32Array.from(vals), o)];
      }
    }
    return this.sampleAllowed(this.logits(), o, mask);
  }

  /** The sampler over a mask's tokens of a whole row: their logits in id order (ties break as over the whole row). */
  private sampleAllowed(row: Float32Array, o: SampleOptions, mask: TokenMask): number {
    if (mask.count === 0) throw new Error('the grammar allows no token here');
    const bits = mask.bits;
    const ids = new Int32Array(mask.count), vals = new Float32Array(mask.count);
    let n = 0;
    for (let w = 0; w < bits.length; w++) {
      for (let v = bits[w]; v; v &= v - 1) {
        const id = (w << 5) + 31 - Math.clz32(v & -v);
        ids[n] = id; vals[n++] = row[id];
      }
    }
    return ids[o.temperature <= 0 ? firstMax(vals.subarray(0, n)) : this.b.sample(vals.subarray(0, n), o)];
  }

  topLogprobs(k: number): TokenLogprob[] {
    return topLogprobs(this.logits(), k);
  }

  private disposers: (() => void)[] = [];

  onDispose(fn: () => void): void {
    this.disposers.push(fn);
  }

  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    this.observer = undefined;
    try {
      for (const fn of this.disposers.splice(0)) fn();
    } finally {
      this.b.release();
    }
  }
}
