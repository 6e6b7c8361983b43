/**
 * One session on the Vulkan engine: its KV cache and DeltaNet states on the device, and its
 * recorded steps. record() is the forward pass, op for op as core-as/engine/forward.ts: recorded
 * once per step shape (tokens per step, logits rows) and replayed for every step.
 */
import { rowBytes } from '../../gguf/index.js';
import { KV_TYPE_IDS, attentionLayer } from '../common.js';
import { stateSizes } from '../payload.js';
import { BackendSettings, type SessionBackend } from '../session-base.js';
import type { SampleOptions } from '../types.js';
import { ATTN_TOKENS, OpList, TOPK_MAX, attnBlock, fbits, MM_MOE_PAIRS, moeMaxTiles } from './graph.js';
import type { MatvecOpts, VkEngine } from './vk-engine.js';

/** Per-session device state (KV cache, DeltaNet states) and its recorded steps. */
export class VkBackend extends BackendSettings implements SessionBackend {
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
        ops.op('ssm_conv', [U, w('ssm_conv1d.weight'), a], [st.convCh, T, s.ssmConv, 0], [Math.ceil(st.convCh / 64)]);
        const dn = [T, s.ssmHeadDim, s.ssmKHeads, s.ssmVHeads, st.convCh, eps, fbits(1 / Math.sqrt(s.ssmHeadDim)), 0];
        if (dec) {
          // one token: the recurrence with the q/k L2 norm and the gated output norm fused in
          ops.op('deltanet', [U, Bt, AL, w('ssm_dt.bias'), w('ssm_a'), b, B.O, Z, w('ssm_norm.weight')], dn, [s.ssmVHeads]);
        } else {
          // several: the chunked form over 32-column slices of each head, then the gated norm
          ops.op('deltanet_chunk', [U, Bt, AL, w('ssm_dt.bias'), w('ssm_a'), b, B.O], dn, [s.ssmVHeads, Math.ceil(s.ssmHeadDim / 32)]);
          ops.op('ssm_gnorm', [B.O, Z, w('ssm_norm.weight')], [s.ssmHeadDim, s.ssmVHeads, eps, 0], [T, s.ssmVHeads]);
        }
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
        ops.op(`kv_store_${this.kvTypes.k}`, [Kb, Kb, a, a, B.PARAMS], [st.kvDim, rowBytes(kT, st.kvDim)], [T, 1], false);
        ops.op(`kv_store_${this.kvTypes.v}`, [Vb, Vb, b, b, B.PARAMS], [st.kvDim, rowBytes(vT, st.kvDim)], [T, 1]);
        const blk = attnBlock(s, T), nBlk = Math.ceil(this.ctx / blk);
        // ATTN_TOKENS tokens per dispatch pair (the partials P, ML hold that many)
        for (let t0 = 0; t0 < T; t0 += ATTN_TOKENS) {
          const n = Math.min(ATTN_TOKENS, T - t0);
          // cache type names are the shader variant suffixes (shaders/variants.json)
          ops.op(`attn_flash_${this.kvTypes.k}_${this.kvTypes.v}`, [QG, a, b, B.P, B.ML, B.PARAMS],
            [s.nHead, s.nHeadKv, s.headDim, rowBytes(kT, st.kvDim), rowBytes(vT, st.kvDim), qStride, fbits(1 / Math.sqrt(s.headDim)), nBlk, blk, t0, 0, 0], [n, s.nHeadKv, nBlk]);
          ops.op('attn_merge', [B.P, B.ML, QG, B.O, B.PARAMS], [s.nHead, s.headDim, nBlk, qStride, blk, t0, 0, 0], [n, s.nHead]);
        }
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
      // several tokens: their (token, expert) pairs grouped by expert, so that each expert's
      // weights are decoded once for all its tokens (mm_moe); one token: a matvec per expert
      const moe = dec ? undefined : { tiles: B.TILES, maxTiles: moeMaxTiles(T * K, s.nExpert), ids: B.IDS };
      if (moe) ops.op('moe_tiles', [B.IDS, B.LIST, B.TILES], [T * K, s.nExpert, MM_MOE_PAIRS, 0], [1]);
      if (e.w.t.has(`blk.${l}.ffn_gate_up_exps.weight`)) {
        mv('ffn_gate_up_exps.weight', B.A, B.GE, T * K, { flags: 1, moe });
      } else {
        mv('ffn_gate_exps.weight', B.A, B.GE, T * K, { flags: 1, barrier: false, moe });
        mv('ffn_up_exps.weight', B.A, B.UE, T * K, { flags: 1, moe });
        ops.op('swiglu', [B.GE, B.UE], [T * K * s.nFfExp], [Math.ceil((T * K * s.nFfExp) / 256)]);
      }
      mv('ffn_down_exps.weight', B.GE, B.DE, T * K, { flags: 3, barrier: false, moe });
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

  /**
   * A recorded state_t command: layer l's DeltaNet state to the engine's STT buffer in the
   * payload's value-column-major layout (toStt), or back. The GPU keeps each head key-row-major
   * (deltanet.comp); the transpose is its own inverse.
   */
  private transposeCmd(l: number, toStt: boolean): number {
    const key = `t${l}:${toStt}`;
    let cmd = this.steps.get(key);
    if (cmd === undefined) {
      const s = this.shape, B = this.e.buf, dk = s.ssmHeadDim, n = Math.ceil(dk / 32);
      const [src, dst] = toStt ? [this.layers[l].b, B.STT] : [B.STT, this.layers[l].b];
      cmd = this.e.dev.record(new OpList(this.e.pipes).op('state_t', [src, dst], [dk, 0, 0, 0], [n, n, s.ssmVHeads]).build());
      this.steps.set(key, cmd);
    }
    return cmd;
  }

  readRecurrent(): Uint8Array {
    const s = this.shape, st = stateSizes(s), dev = this.e.dev;
    const out = new Uint8Array(s.recurrent.filter(Boolean).length * (st.convBytes + st.ssmBytes));
    let o = 0;
    s.recurrent.forEach((r, l) => {
      if (!r) return;
      out.set(new Uint8Array(dev.read(this.layers[l].a, 0, st.convBytes)), o); o += st.convBytes;
      dev.runSync(this.transposeCmd(l, true));
      out.set(new Uint8Array(dev.read(this.e.buf.STT, 0, st.ssmBytes)), o); o += st.ssmBytes;
    });
    return out;
  }

  writeRecurrent(state: Uint8Array | null): void {
    const s = this.shape, st = stateSizes(s), dev = this.e.dev;
    let o = 0;
    s.recurrent.forEach((r, l) => {
      if (!r) return;
      dev.write(this.layers[l].a, 0, state ? state.subarray(o, o + st.convBytes) : new Uint8Array(st.convBytes));
      if (state) {
        dev.write(this.e.buf.STT, 0, state.subarray(o + st.convBytes, o + st.convBytes + st.ssmBytes));
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
