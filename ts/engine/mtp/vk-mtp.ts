/**
 * The MTP draft head on the Vulkan engine: the head's block as a one-layer model on an engine of
 * its own (mtp-file.ts's view of the file), whose steps take rows of [rms(embedding)·enorm |
 * rms(hidden)·hnorm] and project them with eh_proj into the residual stream (step.ts, INPUT_PROJ)
 * instead of token embeddings. The two norms run on the host, as the CPU reference computes them
 * (core-as ops.ts rmsnorm: f64 sum, f32 scale): 2·nEmbd values a row, next to the embedding row
 * the host dequantizes anyway. The head's hidden states come back as any engine's do (A2 after its output
 * norm: step.ts hiddenFrom, VkSessionState.readHidden).
 */
import * as fs from 'node:fs';
import { GgmlType, readTensorBytes, type TensorInfo } from '../../gguf/index.js';
import type { Tokenizer } from '../../tokenizer/tokenizer.js';
import type { EngineOptions, KvType } from '../types.js';
import { VkEngine } from '../vulkan/vk-engine.js';
import { VkSessionState } from '../vulkan/session-state.js';
import { HeadBase, MtpRunner, type MtpHead, type MtpRows } from './head.js';
import type { MtpModel } from './mtp-file.js';

/** The head's weights on a one-layer Vulkan engine; each head a session state (its KV cache) of it. */
export class VkMtpRunner extends MtpRunner {
  readonly engine: VkEngine;
  readonly enorm: Float32Array;
  readonly hnorm: Float32Array;
  /**
   * the runs so far: the engine's scratch serves one step at a time, and heads of different
   * sessions may ask at once (a server slot drafting while another's prefill feeds its head)
   */
  private queue: Promise<unknown> = Promise.resolve();

  /**
   * `trunk`: the trunk engine's options (device, weights mode, chunk, …): the head runs alike, for
   * as many sessions; `room`: the device memory the trunk's plan leaves (the head plans within it,
   * so a head that does not fit is refused here, by name, rather than failing an allocation later)
   */
  constructor(m: MtpModel, o: { tokenizer: Tokenizer; trunk: EngineOptions; kvTypes: { k: KvType; v: KvType }; room?: number }) {
    super();
    if (o.room !== undefined && !(o.room > 0)) throw new Error(`MTP head: no device memory left after the model's plan (lower --ctx, use -ctk q8_0 -ctv q4_0, or run without --mtp)`);
    const options: EngineOptions = {
      model: m.file.path, backend: 'vulkan', ctx: o.trunk.ctx, kvTypes: o.kvTypes, chunk: o.trunk.chunk, sessions: o.trunk.sessions,
      vkDevice: o.trunk.vkDevice, vkWeights: o.trunk.vkWeights, vkMemoryLimit: o.room ?? o.trunk.vkMemoryLimit, vkMvq: o.trunk.vkMvq, vkCoopmat: o.trunk.vkCoopmat, vkF16: o.trunk.vkF16, vkMaxBinding: o.trunk.vkMaxBinding,
    };
    try {
      this.engine = new VkEngine(options, { file: m.file, shape: m.shape, tokenizer: o.tokenizer, head: { weight: m.ehProj } });
    } catch (e) {
      // the engine's refusal, said of the head: what it may use is what the trunk's plan leaves
      const why = (e as Error).message.replace(/^model does not fit/, 'it does not fit').replace(/--vk-memory-limit/g, 'what the model leaves').replace(/, or stream the routed experts from the file \(--ssd-streaming\)$/, ', or run without --mtp');
      throw new Error(`MTP head: ${why}`);
    }
    try {
      const fd = fs.openSync(m.file.path, 'r');
      try {
        const f32 = (t: TensorInfo) => {
          const b = new Uint8Array(t.nbytes);
          readTensorBytes(fd, t, b);
          return t.type === GgmlType.F32 ? new Float32Array(b.buffer, 0, t.rowElems) : this.engine.q.dequantize(t.type, b, t.rowElems);
        };
        this.enorm = f32(m.enorm);
        this.hnorm = f32(m.hnorm);
      } finally {
        fs.closeSync(fd);
      }
    } catch (e) {
      this.engine.dispose();
      throw e;
    }
  }

  /** fn after every run asked before it */
  serial<T>(fn: () => Promise<T>): Promise<T> {
    const next = this.queue.then(fn, fn);
    this.queue = next.catch(() => undefined);
    return next;
  }

  protected newHead(release: () => void): MtpHead {
    return new VkMtpHead(this, new VkSessionState(this.engine), release);
  }

  protected free(): void {
    this.engine.dispose();
  }
}

/** One session's head: its KV cache (a session state of the runner's engine). */
class VkMtpHead extends HeadBase {
  constructor(private readonly r: VkMtpRunner, private readonly state: VkSessionState, release: () => void) {
    super(r.engine, release);
  }

  run(tokens: number[], hidden: Float32Array, pos: number, logitsFrom = 0): Promise<MtpRows> {
    const r = this.r, e = r.engine, n = e.shape.nEmbd, T = tokens.length, eps = Math.fround(e.shape.eps);
    const from = this.start(T, hidden, pos, logitsFrom);
    const emb = e.embed(tokens), input = new Float32Array(2 * T * n);
    const rms = (src: Float32Array, at: number, w: Float32Array, out: number) => {
      let ss = 0;
      for (let i = 0; i < n; i++) ss += src[at + i] * src[at + i];
      const k = Math.fround(1 / Math.sqrt(ss / n + eps));
      for (let i = 0; i < n; i++) input[out + i] = Math.fround(src[at + i] * k) * w[i];
    };
    for (let t = 0; t < T; t++) {
      rms(emb, t * n, r.enorm, 2 * t * n);
      rms(hidden, t * n, r.hnorm, 2 * t * n + n);
    }
    return r.serial(async () => {
      const logits = await this.state.forwardRows(input, T, pos, from, { normFrom: 0 });
      return { logits, hidden: this.state.readHidden() };
    });
  }

  protected free(): void {
    this.state.release();
  }
}
