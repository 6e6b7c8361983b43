/**
 * The MTP draft head on the CPU reference engine: the head's block as a one-layer model in a WASM
 * core of its own (the trunk's forward code: attention over the head's own KV cache, then the
 * MoE, then the head's norm and output), fed z = eh_proj · [rms(embedding) | rms(hidden)] instead
 * of token embeddings (core-as forward.ts mtpInput). A row's input is token x_k with the trunk's
 * hidden state h_{k−1} (after its output norm); a deeper draft feeds back the head's own hidden
 * state (after its shared_head_norm) with the token it drafted.
 */
import * as fs from 'node:fs';
import { GgmlType, readTensorBytes, type TensorInfo } from '../../gguf/index.js';
import type { Tokenizer } from '../../tokenizer/tokenizer.js';
import { CpuEngine } from '../cpu/cpu-engine.js';
import type { KvType } from '../types.js';
import type { MtpModel } from './mtp-file.js';

interface MtpExports {
  forward(sess: number, pos: number, x: number, T: number, logits: number, logitsFrom: number, normFrom: number): number;
  mtpInput(e: number, h: number, T: number, enorm: number, hnorm: number, ehType: number, eh: number, ehRowBytes: number, z: number): number;
  hiddenRows(): number;
  dequantRow(t: number, src: number, dst: number, n: number): void;
}

export interface MtpRows {
  /** logits of each row: the head's guess at the token two after its input's hidden state */
  logits: Float32Array[];
  /** the head's own hidden state of each row (after shared_head_norm): a deeper draft's input */
  hidden: Float32Array;
}

export class CpuMtpHead {
  readonly engine: CpuEngine;
  private readonly x: MtpExports;
  /** the head's session table: its KV cache */
  private readonly tbl: number;
  private readonly hPtr: number;
  private readonly enorm: number;
  private readonly hnorm: number;
  private readonly eh: { type: number; ptr: number; rowBytes: number };

  constructor(m: MtpModel, o: { tokenizer: Tokenizer; ctx: number; kvTypes: { k: KvType; v: KvType }; chunk?: number }) {
    this.engine = new CpuEngine({ model: m.file.path, backend: 'cpu', ctx: o.ctx, kvTypes: o.kvTypes, chunk: o.chunk }, { file: m.file, shape: m.shape, tokenizer: o.tokenizer });
    const core = this.engine.core, n = m.shape.nEmbd;
    this.x = core.x as unknown as MtpExports;
    const fd = fs.openSync(m.file.path, 'r');
    try {
      const raw = (t: TensorInfo) => { const p = core.alloc(t.nbytes); readTensorBytes(fd, t, core.u8(p, t.nbytes)); return p; };
      // the norms as f32 rows (the forward's rmsnorm reads f32 weights)
      const f32 = (t: TensorInfo) => {
        if (t.type === GgmlType.F32) return raw(t);
        const p = core.alloc(n * 4);
        this.x.dequantRow(t.type, raw(t), p, n);
        return p;
      };
      this.enorm = f32(m.enorm);
      this.hnorm = f32(m.hnorm);
      this.eh = { type: m.ehProj.type, ptr: raw(m.ehProj), rowBytes: m.ehProj.rowBytes };
    } finally {
      fs.closeSync(fd);
    }
    this.hPtr = core.alloc(this.engine.chunk * n * 4);
    this.tbl = this.engine.allocSessionTable();
  }

  /** Most rows one run takes. */
  get maxRows(): number {
    return Math.min(this.engine.chunk, this.engine.logitsRows);
  }

  /**
   * Rows i = 0…T−1: token tokens[i] with hidden state hidden[i·nEmbd…] at position pos + i of the
   * head's KV cache (rows before pos must have run already).
   */
  run(tokens: number[], hidden: Float32Array, pos: number): MtpRows {
    const e = this.engine, core = e.core, n = e.shape.nEmbd, T = tokens.length;
    if (!(T >= 1 && T <= this.maxRows)) throw new RangeError(`MTP head: 1..${this.maxRows} rows a run (got ${T})`);
    if (hidden.length !== T * n) throw new RangeError(`MTP head: ${hidden.length} hidden values for ${T} rows of ${n}`);
    if (pos + T > e.options.ctx) throw new Error(`MTP head: positions ${pos}..${pos + T - 1} exceed its ctx ${e.options.ctx}`);
    e.weights.embed(tokens, e.xPtr);
    core.f32(this.hPtr, T * n).set(hidden);
    if (this.x.mtpInput(e.xPtr, this.hPtr, T, this.enorm, this.hnorm, this.eh.type, this.eh.ptr, this.eh.rowBytes, e.xPtr) !== 0) throw new Error('MTP head: input projection failed');
    const rc = this.x.forward(this.tbl, pos, e.xPtr, T, e.logitsPtr, 0, 0);
    if (rc !== 0) throw new Error(`MTP head: forward failed (${rc})`);
    const v = e.shape.nVocab;
    const logits = Array.from({ length: T }, (_, t) => core.f32(e.logitsPtr + t * v * 4, v).slice());
    return { logits, hidden: core.f32(this.x.hiddenRows(), T * n).slice() };
  }

  dispose(): void {
    this.engine.releaseSessionTable(this.tbl);
    this.engine.dispose();
  }
}
