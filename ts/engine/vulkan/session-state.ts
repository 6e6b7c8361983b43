/**
 * One session's state on the Vulkan device: its KV cache and DeltaNet states, and its recorded
 * steps (step.ts, recorded once per step shape and replayed). It reaches the engine only through
 * VkHost (host.ts). BaseSession gives it the Session behaviour shared with the CPU engine.
 */
import { rowBytes } from '../../gguf/index.js';
import { KV_TYPE_IDS, attentionLayer } from '../common.js';
import { stateSizes } from '../payload.js';
import { BackendSettings, type SessionBackend } from '../session-base.js';
import type { SampleOptions, TokenMask } from '../types.js';
import { OpList, TOPK_MAX } from './graph.js';
import type { OutputOwner, RecordedStep, VkHost } from './host.js';
import { KERNELS, dispatch, groups } from './kernels.js';
import { recordStep, type LayerState } from './step.js';

let nextId = 1;

/** Per-session device state (KV cache, DeltaNet states) and its recorded steps. */
export class VkSessionState extends BackendSettings implements SessionBackend, OutputOwner {
  /** the engine's name for this state (batched steps are recorded per set of sessions) */
  readonly id = nextId++;
  /** the device buffers of each layer (a batched step binds them per row) */
  readonly layers: LayerState[] = [];
  /** which LOGITS/ARG row holds our deferred output (a batched step's row; 0 otherwise) */
  private outRow = 0;
  /**
   * The k this session last sampled with (top-k on the device): its decode steps run the top-k
   * stages themselves, so sampling reads k pairs without a second submission (0: greedy so far).
   */
  private topkHint = 0;
  /** the k whose pairs our last step left in TKH for the deferred row (0: none) */
  private topkReady = 0;
  private steps = new Map<string, RecordedStep>();
  /** the recorded state_t commands (transposeCmd) */
  private transposes = new Map<string, number>();
  private rng: number;
  private freed = false;
  /** our deferred logits row and arg-max, saved by keep() */
  private kept?: { row: Float32Array; arg: Uint32Array };

  constructor(private readonly h: VkHost) {
    super(h);
    const s = h.shape, st = stateSizes(s);
    for (let l = 0; l < s.nLayer; l++) {
      if (s.recurrent[l]) this.layers.push({ a: h.dev.createBuffer(st.convBytes, false), b: h.dev.createBuffer(st.ssmBytes, false) });
      else this.layers.push({
        a: h.dev.createBuffer(this.ctx * rowBytes(KV_TYPE_IDS[this.kvTypes.k], st.kvDim), false),
        b: h.dev.createBuffer(this.ctx * rowBytes(KV_TYPE_IDS[this.kvTypes.v], st.kvDim), false),
      });
    }
    this.rng = h.core.alloc(8);
  }

  /** Records the forward of T tokens (logits for rows ≥ logitsFrom, normed rows ≥ hiddenFrom into A2): step.ts. */
  private record(T: number, logitsFrom: number, topK: number, hiddenFrom: number): RecordedStep {
    const h = this.h, ops = new OpList(h.pipes);
    recordStep({ h, ops, T, layers: this.layers, kvTypes: this.kvTypes, ctx: this.ctx, paramWords: h.paramWords, topK }, logitsFrom, hiddenFrom);
    // one segment, or (SSD streaming) one per streamed layer's routing and the rest
    const step: RecordedStep = { cmds: [], layers: [], names: [] };
    try {
      for (const seg of ops.segments()) {
        step.cmds.push(h.dev.record(seg.words, h.options.vkProfile === true));
        step.layers.push(seg.layer);
        step.names.push(seg.names);
      }
    } catch (e) {
      for (const c of step.cmds) h.dev.freeCommand(c);
      throw e;
    }
    return step;
  }

  /** the mask the last step's arg-max applied (its ARG is the arg-max among the allowed) */
  private masked?: TokenMask;

  lastMasked(): TokenMask | undefined {
    return this.masked;
  }

  maskedArgmax(mask: TokenMask): number | undefined {
    // the deferred row must still be on the device, in row 0 (a single session's step)
    if (this.kept || !this.h.out.owns(this) || this.outRow !== 0) return undefined;
    this.h.out.argmaxMasked(mask);
    this.masked = mask;
    return this.lastArgmax();
  }

  async forward(tokens: number[], pos: number, logitsFrom: number, deferLast = false, mask?: TokenMask, normFrom = -1): Promise<Float32Array[]> {
    const x = this.h.stepInput(tokens.length), rows = this.h.takePrepared(tokens);
    if (rows) x.set(rows);
    else this.h.embedInto(tokens, x);
    return this.forwardRows(undefined, tokens.length, pos, logitsFrom, { deferLast, mask, normFrom });
  }

  prepare(tokens: number[]): void {
    this.h.prepareInput(tokens);
  }

  /** rows the last step left after the final norm in A2 (readHidden; the next step overwrites them) */
  private hiddenRows = 0;

  /**
   * forward() from input rows instead of tokens: T rows of the step's input (token embeddings, or
   * an MTP head's wide rows: VkMtpHead; undefined: written into the step input already, as
   * forward() decodes a prompt's rows in place). normFrom ≥ 0: rows from there on after the final
   * norm for readHidden.
   */
  async forwardRows(input: Float32Array | undefined, T: number, pos: number, logitsFrom: number, o: { deferLast?: boolean; mask?: TokenMask; normFrom?: number } = {}): Promise<Float32Array[]> {
    const e = this.h, s = this.shape, deferLast = o.deferLast ?? false, mask = o.mask;
    if (T - logitsFrom > this.logitsRows) throw new Error('too many logits rows for one step');
    const hiddenFrom = o.normFrom !== undefined && o.normFrom >= 0 ? Math.min(o.normFrom, T) : T;
    // LOGITS and ARG are engine-wide: another session's deferred row is saved before we overwrite it
    e.out.claim(this, false);
    this.kept = undefined;
    this.outRow = 0;
    this.topkReady = 0;
    // a deferred last row of a session that samples with top-k: the step runs the top-k too
    const topK = deferLast && T - logitsFrom === 1 ? this.topkHint : 0;
    const key = `${T}:${logitsFrom}:${topK}:${hiddenFrom}`;
    let step = this.steps.get(key);
    if (step === undefined) { step = this.record(T, logitsFrom, topK, hiddenFrom); this.steps.set(key, step); }
    // a grammar's mask applies to a deferred single row (the arg-max then picks among the allowed)
    const m = deferLast && T - logitsFrom === 1 ? mask : undefined;
    e.out.setMask(m);
    this.masked = m;
    if (input) e.dev.write(e.buf.XIN, 0, new Uint8Array(input.buffer, input.byteOffset, input.byteLength));
    e.dev.write(e.buf.PIN, 0, new Uint8Array(Uint32Array.of(pos, T, 0, 0).buffer));
    this.hiddenRows = 0;
    await e.runStep(step, T);
    this.hiddenRows = T - hiddenFrom;
    const n = T - logitsFrom;
    if (n <= 0) return [];
    // one row left on the device: BaseSession reads it (readLast) or only its arg-max (lastArgmax)
    if (deferLast && n === 1) { e.out.claim(this, true); this.topkReady = topK; return []; }
    const all = new Float32Array(e.dev.read(e.buf.LOGITS, 0, n * s.nVocab * 4));
    // one row (decode): the read-back copy itself, no second 1 MB copy
    return n === 1 ? [all] : Array.from({ length: n }, (_, i) => all.slice(i * s.nVocab, (i + 1) * s.nVocab));
  }

  /** rows of the last draft step (0: none pending) */
  private draftT = 0;
  /** the recorded copies back to a draft step's row r (restoreCmd) */
  private restores = new Map<number, number>();

  /**
   * A draft step: tokens at pos… as consecutive rows of this session, each computed as its own
   * decode step is (step.ts `draft`); every row's logits and arg-max stay in LOGITS/ARG. Returns
   * each row's arg-max (undefined for a row with NaN). keepDraft() must follow.
   */
  readHidden(): Float32Array {
    return new Float32Array(this.h.dev.read(this.h.buf.A2, 0, this.hiddenRows * this.shape.nEmbd * 4));
  }

  async draftStep(tokens: number[], pos: number, hidden = false): Promise<(number | undefined)[]> {
    const e = this.h, T = tokens.length;
    if (!(T >= 1 && T <= e.draftRows)) throw new RangeError(`a draft step takes 1..${e.draftRows} rows (got ${T})`);
    e.out.claim(this, false);
    this.kept = undefined;
    this.masked = undefined;
    this.outRow = 0;
    this.topkReady = 0;
    const key = `d${T}${hidden ? 'h' : ''}`;
    let step = this.steps.get(key);
    if (step === undefined) {
      const ops = new OpList(e.pipes);
      const rows = tokens.map((_, i) => ({ layers: this.layers, params: e.paramRow(i) }));
      recordStep({ h: e, ops, T, rows, draft: true, layers: this.layers, kvTypes: this.kvTypes, ctx: this.ctx, paramWords: e.paramWords }, 0, hidden ? 0 : T);
      step = { cmds: [e.dev.record(ops.build(), e.options.vkProfile === true)], layers: [-1], names: [ops.names] };
      this.steps.set(key, step);
    }
    e.out.setMask(undefined);
    const pin = new Uint32Array(T * e.paramWords);
    for (let i = 0; i < T; i++) { pin[i * e.paramWords] = pos + i; pin[i * e.paramWords + 1] = 1; }
    e.embedInto(tokens, e.stepInput(T));
    e.dev.write(e.buf.PIN, 0, new Uint8Array(pin.buffer));
    this.draftT = T;
    this.hiddenRows = 0;
    await e.runStep(step, T);
    if (hidden) this.hiddenRows = T;
    const arg = new Uint32Array(e.dev.read(e.buf.ARG, 0, 8 * T));
    return tokens.map((_, i) => (arg[2 * i + 1] !== 0 || arg[2 * i] >= this.shape.nVocab ? undefined : arg[2 * i]));
  }

  /** Row i's logits of the last draft step (LOGITS row i, until the next step). */
  draftRow(i: number): Float32Array {
    if (!(i >= 0 && i < this.draftT)) throw new RangeError(`draftRow: row ${i} of ${this.draftT}`);
    return this.readRow(i);
  }

  /** Keeps the first n rows of the last draft step: the recurrent state after row n − 1 (copied back unless it is the last), whose logits are ours. */
  keepDraft(n: number): void {
    const T = this.draftT;
    if (!(n >= 1 && n <= T)) throw new RangeError(`keepDraft: ${n} of ${T} rows`);
    if (n < T) this.h.dev.runSync(this.restoreCmd(n - 1));
    this.draftT = 0;
    this.h.out.claim(this, true);
    this.outRow = n - 1;
  }

  /** The copies of a draft step's row-r checkpoints (conv history, DeltaNet state) into every recurrent layer's state. */
  private restoreCmd(r: number): number {
    let cmd = this.restores.get(r);
    if (cmd !== undefined) return cmd;
    const st = stateSizes(this.shape), ops = new OpList(this.h.pipes);
    const copy = (src: number, dst: number, bytes: number, barrier: boolean) => {
      if (bytes % 16 !== 0) throw new Error(`draft checkpoints: a state of ${bytes} bytes is not whole 16-byte words`);
      dispatch(ops, KERNELS.copy, { SRC: src, DST: dst }, { n4: bytes / 16 }, [Math.min(1024, Math.ceil(bytes / 16 / 256))], { barrier });
    };
    const rec = this.shape.recurrent.flatMap((x, l) => (x ? [l] : []));
    rec.forEach((l, i) => {
      const ck = this.h.draftCheckpoints(l);
      copy(ck.convRows[r], this.layers[l].a, st.convBytes, false);
      copy(ck.stateRows[r], this.layers[l].b, st.ssmBytes, i === rec.length - 1);
    });
    cmd = this.h.dev.record(ops.build());
    this.restores.set(r, cmd);
    return cmd;
  }

  /** A batched step left this session's output in LOGITS/ARG row `row` (the engine claimed them for us). */
  batchedOutput(row: number): void {
    this.kept = undefined;
    this.masked = undefined;
    this.outRow = row;
    this.topkReady = 0;
  }

  /** Saves this session's deferred row and arg-max to host memory (another session is about to run). */
  keep(): void {
    this.kept = { row: this.readLast(), arg: this.readArg() };
  }

  /** ARG row `row` of the last step (default: our deferred row's): {arg-max index, flags} (argmax.comp) */
  private readArg(row = this.outRow): Uint32Array {
    return new Uint32Array(this.h.dev.read(this.h.buf.ARG, 8 * row, 8));
  }

  /** LOGITS row `row` of the last step */
  private readRow(row: number): Float32Array {
    const n = this.shape.nVocab;
    return new Float32Array(this.h.dev.read(this.h.buf.LOGITS, row * n * 4, n * 4));
  }

  readLast(): Float32Array {
    return this.kept?.row ?? this.readRow(this.outRow);
  }

  lastArgmax(): number | undefined {
    const [id, flags] = this.kept?.arg ?? this.readArg();
    return flags !== 0 || id >= this.shape.nVocab ? undefined : id;
  }

  lastTopK(k: number, hint = true): { ids: number[]; logits: Float32Array } | undefined {
    // a row saved by keep() is on the host already; a NaN row follows the host sampler's rules
    if (this.kept || !this.h.out.owns(this) || !(k > 0 && k <= TOPK_MAX && k < this.shape.nVocab)) return undefined;
    if (this.readArg()[1] !== 0) return undefined;
    const folded = this.topkReady === k;
    const pairs = folded ? this.h.out.readTopK(k) : this.h.out.topK(k, this.outRow);
    // (a top-k run here overwrote what the step left in TKH)
    if (!folded) this.topkReady = 0;
    if (hint) this.topkHint = k;
    return topIds(pairs, k);
  }

  /** Row i of the last draft step: its k best logits with their ids, in ascending id order (undefined: NaN in the row, or k unsupported). */
  draftTopK(i: number, k: number): { ids: number[]; logits: Float32Array } | undefined {
    if (!(i >= 0 && i < this.draftT) || !(k > 0 && k <= TOPK_MAX && k < this.shape.nVocab)) return undefined;
    if (this.readArg(i)[1] !== 0) return undefined;
    this.topkReady = 0;
    return topIds(this.h.out.topK(k, i), k);
  }

  /**
   * A recorded state_t command: layer l's DeltaNet state to the engine's STT buffer in the
   * payload's value-column-major layout (toStt), or back. The GPU keeps each head key-row-major
   * (deltanet.comp); the transpose is its own inverse.
   */
  private transposeCmd(l: number, toStt: boolean): number {
    const key = `t${l}:${toStt}`;
    let cmd = this.transposes.get(key);
    if (cmd === undefined) {
      const s = this.shape, B = this.h.buf, dk = s.ssmHeadDim, n = groups(KERNELS.state_t, dk);
      const [src, dst] = toStt ? [this.layers[l].b, B.STT] : [B.STT, this.layers[l].b];
      const ops = new OpList(this.h.pipes);
      dispatch(ops, KERNELS.state_t, { src, dst }, { dk }, [n, n, s.ssmVHeads]);
      cmd = this.h.dev.record(ops.build());
      this.transposes.set(key, cmd);
    }
    return cmd;
  }

  readRecurrent(): Uint8Array {
    const s = this.shape, st = stateSizes(s), dev = this.h.dev;
    const out = new Uint8Array(s.recurrent.filter(Boolean).length * (st.convBytes + st.ssmBytes));
    let o = 0;
    s.recurrent.forEach((r, l) => {
      if (!r) return;
      out.set(new Uint8Array(dev.read(this.layers[l].a, 0, st.convBytes)), o); o += st.convBytes;
      dev.runSync(this.transposeCmd(l, true));
      out.set(new Uint8Array(dev.read(this.h.buf.STT, 0, st.ssmBytes)), o); o += st.ssmBytes;
    });
    return out;
  }

  writeRecurrent(state: Uint8Array | null): void {
    const s = this.shape, st = stateSizes(s), dev = this.h.dev;
    let o = 0;
    s.recurrent.forEach((r, l) => {
      if (!r) return;
      dev.write(this.layers[l].a, 0, state ? state.subarray(o, o + st.convBytes) : new Uint8Array(st.convBytes));
      if (state) {
        dev.write(this.h.buf.STT, 0, state.subarray(o + st.convBytes, o + st.convBytes + st.ssmBytes));
        dev.runSync(this.transposeCmd(l, false));
      } else {
        dev.write(this.layers[l].b, 0, new Uint8Array(st.ssmBytes));
      }
      o += st.convBytes + st.ssmBytes;
    });
  }

  readKv(i: number, n: number): { k: Uint8Array; v: Uint8Array } {
    const st = stateSizes(this.shape), L = this.layers[attentionLayer(this.shape, i)];
    const kb = n * rowBytes(KV_TYPE_IDS[this.kvTypes.k], st.kvDim), vb = n * rowBytes(KV_TYPE_IDS[this.kvTypes.v], st.kvDim);
    return { k: n ? new Uint8Array(this.h.dev.read(L.a, 0, kb)) : new Uint8Array(0), v: n ? new Uint8Array(this.h.dev.read(L.b, 0, vb)) : new Uint8Array(0) };
  }

  writeKv(i: number, k: Uint8Array, v: Uint8Array): void {
    const L = this.layers[attentionLayer(this.shape, i)];
    if (k.byteLength) this.h.dev.write(L.a, 0, k);
    if (v.byteLength) this.h.dev.write(L.b, 0, v);
  }

  seed(seed: number): void {
    new DataView(this.h.core.memory.buffer).setBigUint64(this.rng, BigInt.asUintN(64, BigInt(Math.floor(seed))), true);
  }

  sample(logits: Float32Array, o: SampleOptions): number {
    return this.h.sampleWith(logits, o, this.rng);
  }

  /** whether this state lives on that engine */
  belongsTo(h: VkHost): boolean {
    return this.h === h;
  }

  release(): void {
    if (this.freed) return;
    this.freed = true;
    this.h.out.release(this);
    this.h.forgetSession(this.id);
    for (const st of this.steps.values()) for (const c of st.cmds) this.h.dev.freeCommand(c);
    for (const c of this.transposes.values()) this.h.dev.freeCommand(c);
    for (const c of this.restores.values()) this.h.dev.freeCommand(c);
    for (const L of this.layers) { this.h.dev.freeBuffer(L.a); this.h.dev.freeBuffer(L.b); }
  }
}

/** topk.comp's (logit, id) pairs as the sampler's top-k set: ids ascending, with their logits. */
function topIds(pairs: Uint32Array, k: number): { ids: number[]; logits: Float32Array } {
  const f = new Float32Array(pairs.buffer, pairs.byteOffset, pairs.length);
  const top: [number, number][] = [];
  for (let i = 0; i < k; i++) if (pairs[2 * i + 1] !== 0xffffffff) top.push([pairs[2 * i + 1], f[2 * i]]);
  top.sort((a, b) => a[0] - b[0]);
  return { ids: top.map((x) => x[0]), logits: Float32Array.from(top, (x) => x[1]) };
}
