/**
 * The MTP draft head on the CPU reference engine: the head's block as a one-layer model in a WASM
 * core of its own (the trunk's forward code: attention over the head's own KV cache, then the
 * MoE, then the head's norm and output), fed z = eh_proj · [rms(embedding) | rms(hidden)] instead
 * of token embeddings (core-as forward.ts mtpInput). A row's input is token x_k with the trunk's
 * hidden state h_{k−1} (after its output norm); a deeper draft feeds back the head's own hidden
 * state (after its shared_head_norm) with the token it drafted. Heads run one at a time (the
 * WASM core is single-threaded and a run does not yield).
 */
import * as fs from 'node:fs';
import { GgmlType, readTensorBytes, type TensorInfo } from '../../gguf/index.js';
import type { Tokenizer } from '../../tokenizer/tokenizer.js';
import { CpuEngine } from '../cpu/cpu-engine.js';
import type { KvType } from '../types.js';
import { HeadBase, MtpRunner, type MtpHead, type MtpRows } from './head.js';
import type { MtpModel } from './mtp-file.js';

interface MtpExports {
  forward(sess: number, pos: number, x: number, T: number, logits: number, logitsFrom: number, normFrom: number): number;
  mtpInput(e: number, h: number, T: number, enorm: number, hnorm: number, ehType: number, eh: number, ehRowBytes: number, z: number): number;
  hiddenRows(): number;
  dequantRow(t: number, src: number, dst: number, n: number): void;
}

/** The head's weights in a one-layer CPU engine; each head a session table (its KV cache) of it. */
export class CpuMtpRunner extends MtpRunner {
  readonly engine: CpuEngine;
  readonly x: MtpExports;
  readonly hPtr: number;
  readonly enorm: number;
  readonly hnorm: number;
  readonly eh: { type: number; ptr: number; rowBytes: number };

  constructor(m: MtpModel, o: { tokenizer: Tokenizer; ctx: number; kvTypes: { k: KvType; v: KvType }; chunk?: number }) {
    super();
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
  }

  protected newHead(release: () => void): MtpHead {
    return new CpuMtpHead(this, this.engine.allocSessionTable(), release);
  }

  protected free(): void {
    this.engine.dispose();
  }
}

/** One session's head: its KV cache (a session table of the runner's engine). */
class CpuMtpHead extends HeadBase {
  constructor(private readonly r: CpuMtpRunner, private readonly tbl: number, release: () => void) {
    super(r.engine, release);
  }

  async run(tokens: number[], hidden: Float32Array, pos: number, logitsFrom = 0): Promise<MtpRows> {
    const r = this.r, e = r.engine, core = e.core, n = e.shape.nEmbd, T = tokens.length;
    const from = this.start(T, hidden, pos, logitsFrom);
    e.weights.embed(tokens, e.xPtr);
    core.f32(r.hPtr, T * n).set(hidden);
    if (r.x.mtpInput(e.xPtr, r.hPtr, T, r.enorm, r.hnorm, r.eh.type, r.eh.ptr, r.eh.rowBytes, e.xPtr) !== 0) throw new Error('MTP head: input projection failed');
    const rc = r.x.forward(this.tbl, pos, e.xPtr, T, e.logitsPtr, from, 0);
    if (rc !== 0) throw new Error(`MTP head: forward failed (${rc})`);
    const v = e.shape.nVocab;
    const logits = Array.from({ length: T - from }, (_, t) => core.f32(e.logitsPtr + t * v * 4, v).slice());
    return { logits, hidden: core.f32(r.x.hiddenRows(), T * n).slice() };
  }

  protected free(): void {
    this.r.engine.releaseSessionTable(this.tbl);
  }
}
