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

/** The checks every head makes of a run's arguments (its ctx and row limit). */
export function checkRun(h: MtpHead, ctx: number, T: number, hidden: Float32Array, pos: number, logitsFrom: number): void {
  const most = logitsFrom >= T ? h.maxRowsNoLogits : h.maxRows;
  if (!(T >= 1 && T <= most)) throw new RangeError(`MTP head: 1..${most} rows a run (got ${T})`);
  if (hidden.length !== T * h.nEmbd) throw new RangeError(`MTP head: ${hidden.length} hidden values for ${T} rows of ${h.nEmbd}`);
  if (pos + T > ctx) throw new Error(`MTP head: positions ${pos}..${pos + T - 1} exceed its ctx ${ctx}`);
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
