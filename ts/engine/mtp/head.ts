/**
 * What an MTP draft head does, whatever runs it (cpu-mtp.ts, vk-mtp.ts): rows i = 0…T−1 are
 * token tokens[i] with hidden state hidden[i·nEmbd…] at position pos + i of the head's own KV
 * cache (rows before pos must have run already). A row's logits are the head's guess at the token
 * two after its hidden state's; its own hidden state (after shared_head_norm) is a deeper draft's
 * input.
 */
export interface MtpRows {
  /** logits of rows logitsFrom…T−1 */
  logits: Float32Array[];
  /** the head's own hidden state of every row (after shared_head_norm) */
  hidden: Float32Array;
}

export interface MtpHead {
  readonly nEmbd: number;
  /** most rows one run takes */
  readonly maxRows: number;
  /** most rows one run takes when it returns no logits (logitsFrom = T: a catch-up) */
  readonly maxRowsNoLogits: number;
  /** `logitsFrom` (default 0): rows before it return no logits (a catch-up over rows nobody drafts from) */
  run(tokens: number[], hidden: Float32Array, pos: number, logitsFrom?: number): Promise<MtpRows>;
  dispose(): void;
}

/** What a head needs to know of its runner's engine (CpuEngine and VkEngine alike). */
interface HeadEngine { shape: { nEmbd: number }; chunk: number; logitsRows: number; options: { ctx: number } }

/**
 * What every head shares whatever runs it: its limits (from its runner's engine), the checks of
 * a run's arguments, and disposal (its own state first, then its hold on the runner).
 */
export abstract class HeadBase implements MtpHead {
  private disposed = false;

  constructor(private readonly engine: HeadEngine, private readonly release: () => void) {}

  get nEmbd(): number {
    return this.engine.shape.nEmbd;
  }

  get maxRows(): number {
    return Math.min(this.engine.chunk, this.engine.logitsRows);
  }

  get maxRowsNoLogits(): number {
    return this.engine.chunk;
  }

  abstract run(tokens: number[], hidden: Float32Array, pos: number, logitsFrom?: number): Promise<MtpRows>;

  /** A run's arguments checked (its ctx and row limit); the first row with logits (T: none). */
  protected start(T: number, hidden: Float32Array, pos: number, logitsFrom: number): number {
    if (this.disposed) throw new Error('MTP head: disposed');
    const most = logitsFrom >= T ? this.maxRowsNoLogits : this.maxRows, ctx = this.engine.options.ctx;
    if (!(T >= 1 && T <= most)) throw new RangeError(`MTP head: 1..${most} rows a run (got ${T})`);
    if (hidden.length !== T * this.nEmbd) throw new RangeError(`MTP head: ${hidden.length} hidden values for ${T} rows of ${this.nEmbd}`);
    if (pos + T > ctx) throw new Error(`MTP head: positions ${pos}..${pos + T - 1} exceed its ctx ${ctx}`);
    return Math.min(Math.max(0, logitsFrom), T);
  }

  /** frees the head's own state (its KV cache) */
  protected abstract free(): void;

  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    this.free();
    this.release();
  }
}

/**
 * The head's weights on an engine of their own, shared by the heads of every session that drafts
 * (each head: its own KV cache). Each open() is a user; the runner frees itself, and tells
 * `onIdle`, when the last head is disposed.
 */
export abstract class MtpRunner {
  private users = 0;
  private idle?: () => void;

  /** a head with its own KV cache */
  open(): MtpHead {
    this.users++;
    try {
      return this.newHead(() => this.release());
    } catch (e) {
      this.release();
      throw e;
    }
  }

  onIdle(fn: () => void): void {
    this.idle = fn;
  }

  private release(): void {
    if (--this.users > 0) return;
    this.free();
    this.idle?.();
  }

  protected abstract newHead(release: () => void): MtpHead;
  protected abstract free(): void;
}
