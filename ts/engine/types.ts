/**
 * The one Session API over both backends (CPU WASM reference, Vulkan). Everything above the
 * engine — CLI, server, agent, bench, eval — uses only this.
 */
import type { ModelShape } from '../model/shape.js';
import type { Tokenizer } from '../tokenizer/tokenizer.js';

export type Backend = 'cpu' | 'vulkan';
/** KV cache row types: f16 (CPU default), q8_0, q4_0; f32 for exact reference runs */
export type KvType = 'f32' | 'f16' | 'q8_0' | 'q4_0';

export interface Steering {
  /** n_layer × hidden f32 directions */
  directions: Float32Array;
  attnScale: number;
  ffnScale: number;
}

export interface EngineOptions {
  model: string;
  backend: Backend;
  /** context capacity in tokens */
  ctx: number;
  kvTypes?: { k: KvType; v: KvType };
  /** prefill chunk (tokens per forward call) */
  chunk?: number;
  /** stream routed experts from the file (--ssd-streaming); CPU default: only when the model does not fit, Vulkan: never */
  streamExperts?: boolean | 'auto';
  /** expert cache size in MiB when streaming */
  expertCacheMiB?: number;
  /** CPU: expert cache size in expert slots when streaming (takes precedence over expertCacheMiB) */
  expertCacheSlots?: number;
  /**
   * streaming warm start: the expert-use counts file (expert-usage.ts; the engine adds its
   * routes to it when disposed), how many of the most used experts to preload (default: as many
   * as the cache holds), or cold: preload none
   */
  expertUsage?: { file: string; preload?: number; cold?: boolean };
  /** streaming: the routed experts of the first N layers stay resident (--ssd-streaming-full-layers) */
  expertFullLayers?: number;
  steering?: Steering;
  /** Vulkan: record GPU timestamps per dispatch (see VkEngine.profile()) */
  vkProfile?: boolean;
  /** Vulkan: device index (default: the first real GPU, lavapipe last; the CLI reads Q36_VK_DEVICE) */
  vkDevice?: number;
  /**
   * Vulkan: how weights reach the GPU: import = the mmap'd file bound in place (zero-copy,
   * VK_EXT_external_memory_host), upload = copied to device-local memory; auto (default; the CLI
   * reads Q36_VK_WEIGHTS) imports on unified-memory devices
   */
  vkWeights?: 'auto' | 'import' | 'upload';
  /** Vulkan: decode matvec rows per workgroup pinned to 1, 2 or 4 (measurements; the CLI reads Q36_VK_MV_ROWS) */
  vkMatvecRows?: 1 | 2 | 4;
  /**
   * Vulkan: the weight types (matvec variant names: q2_k, iq2_xxs, …) whose one-activation-row
   * products run on mv.comp instead of matvec.comp, for every session and batched step alike
   * (measurements; default none, docs/vulkan.md says why; the CLI reads Q36_VK_MV). A type of dense weights
   * listed here gives a batched row other bits than alone: batched steps run dense weights
   * through the matmuls, which sum in matvec's order.
   */
  vkMvTypes?: string[];
  /**
   * Vulkan: the products of decode and batched steps over int8 activation levels and packed
   * integer dot products (mvq.comp): true every product over a norm's output or the routed SwiGLU
   * wherever the device has the packed dot, 'experts' the routed experts only, false none (the f32
   * matvecs). Default: every product where the packed 4×8-bit signed dot is accelerated
   * (integerDotAccelerated), none where the driver only emulates it (Vulkan 1.3 makes the feature
   * mandatory: RADV reports it on GFX10, where it is slower than the f32 matvecs). The CLI reads
   * Q36_VK_MVQ=0|1|experts, for measurements.
   */
  vkMvq?: boolean | 'experts';
  /**
   * Vulkan: the tiled prefill matmuls (dense and grouped routed experts) on the device's matrix
   * units (mmc.comp / mmc_moe.comp: f16 tiles, f32 sums) where it has them: true (default), false
   * the f32 tiles (mm.comp, the fallback; the CLI reads Q36_VK_COOPMAT=0|1)
   */
  vkCoopmat?: boolean;
  /**
   * Vulkan: where the matrix units are not in use, the tiled prefill matmuls with packed f16
   * products (mmh.comp: f16 operands and partial sums, f32 sums every 32 values; twice the f32
   * rate on RDNA, the BC-250): true; false or unset the exact f32 tiles (the CLI reads Q36_VK_F16=0|1).
   * Costs ~10⁻³ of each product's largest output (docs/vulkan.md).
   */
  vkF16?: boolean;
  /** Vulkan: prefill attention in tiles of tokens (attn_tile, default) or per token (attn_flash: false; A/B measurements) */
  vkAttnTile?: boolean;
  /**
   * Vulkan: bytes of device memory the engine may plan for, in place of the device's device-local
   * memory (a 16 GB board simulated on a larger GPU: the budget, the prefill step size and the
   * refusals follow it). Must not exceed the device's own.
   */
  vkMemoryLimit?: number;
  /**
   * Vulkan SSD streaming: expert slots in host-visible memory read into in place (default on
   * unified memory), or device-local slots filled through a host-visible stage (default on a
   * discrete GPU, where the GPU would read host memory across PCIe). Tests run both.
   */
  vkStreamDirect?: boolean;
  /** Vulkan: cap on one binding's bytes below maxStorageBufferRange (tests: forces windowed weights) */
  vkMaxBinding?: number;
  /**
   * Vulkan: rows a batched decode step may hold (q36-server --batched-session N): the scratch
   * buffers are sized for that many sessions' tokens in one step. Default 1 (no batched steps).
   */
  batchRows?: number;
  /**
   * Speculative decoding: the most drafted tokens one draft step verifies (Session.evalDraft; the
   * Vulkan engine sizes its draft rows and state checkpoints for it). Default 0: none.
   */
  draftMax?: number;
  /**
   * sessions the caller keeps live at once (q36-server --batched-session N): the memory budget
   * counts that many KV caches and recurrent states. Default 1.
   */
  sessions?: number;
  /** keep an automatic snapshot every this many tokens (at chunk boundaries) */
  snapshotInterval?: number;
  /** at most this many automatic snapshots per session */
  maxSnapshots?: number;
}

export interface SampleOptions {
  temperature: number;
  topK?: number;
  topP?: number;
  minP?: number;
}

/**
 * The tokens a grammar allows next (constrained decoding): bit id of `bits` set when token id
 * may be sampled; `count` of them.
 */
export interface TokenMask {
  readonly bits: Uint32Array;
  readonly count: number;
}

export interface TokenLogprob {
  id: number;
  logprob: number;
}

export interface EvalOptions {
  progress?: (done: number, total: number) => void;
  /** receive the logits of every evaluated position (test vectors) */
  onLogits?: (row: Float32Array, position: number) => void;
  /**
   * receive the hidden state of every evaluated position after the final norm (the row the LM
   * head reads; the MTP head's input), where the backend can give it (the CPU engine)
   */
  onHidden?: (row: Float32Array, position: number) => void;
  signal?: AbortSignal;
  /**
   * the grammar mask the token after these will be sampled under: a backend that takes the
   * arg-max on the device applies it there (greedy constrained decoding then reads no row)
   */
  mask?: TokenMask;
  /**
   * more tokens follow in a later call (a prefill in quanta): the automatic snapshot at a chunk
   * boundary is kept at this call's end too, as one long call would keep it
   */
  continues?: boolean;
}

/** Rows `tokens` at positions pos… were evaluated; `hidden` holds their states after the final norm (tokens.length × nEmbd). */
export type HiddenObserver = (pos: number, tokens: readonly number[], hidden: Float32Array) => void | Promise<void>;

/** In-memory snapshot: what cannot be recomputed from the KV rows below `pos`. */
export interface Snapshot {
  readonly pos: number;
  readonly tokens: readonly number[];
  readonly logits: Float32Array;
  /** backend state (DeltaNet conv + recurrent), opaque */
  readonly state: Uint8Array;
}

export interface Session {
  readonly tokens: readonly number[];
  /** tokens evaluated since the session was made, rewinds' re-evaluations included (what a prefill really cost) */
  readonly evaluated: number;
  readonly ctx: number;
  readonly kvTypes: { k: KvType; v: KvType };
  /** appends tokens and evaluates them */
  eval(tokens: readonly number[], o?: EvalOptions): Promise<void>;
  /** logits of the next token (after the last evaluated one) */
  logits(): Float32Array;
  /** brings the state to exactly `tokens`: reuses the common prefix (via snapshots), evaluates the rest */
  sync(tokens: readonly number[], o?: EvalOptions): Promise<{ reused: number; evaluated: number }>;
  commonPrefix(tokens: readonly number[]): number;
  /** back to the first n tokens (restores the nearest snapshot ≤ n and re-evaluates the gap) */
  rewind(n: number, o?: EvalOptions): Promise<void>;
  snapshot(): Snapshot;
  restore(s: Snapshot): void;
  /** keeps a rewind point at the current position (sync/rewind can come back here without re-evaluating) */
  checkpoint(): void;
  /** the `Q36 ` session payload (v2 f16 KV, v3 typed KV) */
  savePayload(): Uint8Array;
  loadPayload(payload: Uint8Array): void;
  /**
   * Speculative decoding (greedy): evaluates `tokens` — the next token, then drafted ones — in one
   * step, each row computed exactly as its own decode step would be, and returns each row's
   * greedy next token (undefined where the backend cannot tell: NaN). keepDraft(n) must follow
   * before anything else is asked of the session. At most draftRows tokens.
   */
  evalDraft(tokens: readonly number[]): Promise<(number | undefined)[]>;
  /**
   * Keeps the first n (1 ≤ n ≤ T) tokens of the last evalDraft: the session is then exactly as
   * after evaluating those n alone (state, tokens), their last row's logits the current ones.
   */
  keepDraft(n: number): Promise<void>;
  /**
   * Between evalDraft and keepDraft: row i's next token drawn as sample() would draw it after
   * rows 0…i (the same sampler, random stream and mask rules), for sampled steps' drafts: a
   * draft equal to the draw is kept, and the draw is the step's token either way.
   */
  sampleDraftRow(i: number, o: SampleOptions, mask?: TokenMask): number;
  /** most tokens one evalDraft takes (1: no drafts) */
  readonly draftRows: number;
  /**
   * From now on, every forward tells `fn` the hidden state (after the final norm) of each row it
   * evaluated (an MTP drafter keeps its head in step with them); undefined stops it. Throws on a
   * backend that cannot give them (the CPU engine can).
   */
  observeHidden(fn: HiddenObserver | undefined): void;
  /** fn runs when this session is disposed (what follows the session goes with it: an MTP drafter's head) */
  onDispose(fn: () => void): void;
  /** the next token: sampled (or the arg-max at temperature 0) among all tokens, or among a mask's */
  sample(o: SampleOptions, mask?: TokenMask): number;
  /** log-softmax of the current logits: the top k */
  topLogprobs(k: number): TokenLogprob[];
  /** seeds the sampler (reproducible sampling) */
  seed(seed: number): void;
  dispose(): void;
}

/** One row of a batched decode step: a session and the token it takes next. */
export interface BatchItem {
  session: Session;
  token: number;
  /** the grammar mask of the token after this one (applied when the row runs alone) */
  mask?: TokenMask;
}

export interface Engine {
  readonly backend: Backend;
  readonly shape: ModelShape;
  readonly tokenizer: Tokenizer;
  readonly options: Readonly<EngineOptions>;
  newSession(): Session;
  /**
   * Most rows decodeBatch() takes in one step (1: the engine has no batched step; evalBatch in
   * batch.ts then runs the rows one after another).
   */
  readonly batchRows: number;
  /**
   * One token for each of 2..batchRows distinct sessions of this engine in one model step
   * (weights read once for all rows; positions, KV and recurrent state per row). Use evalBatch().
   */
  decodeBatch?(items: readonly BatchItem[]): Promise<void>;
  /**
   * SSD streaming's expert-cache counters (slots, hits, misses, bytes read); undefined when every
   * routed expert is resident
   */
  expertStats?(): import('./expert-cache.js').ExpertStats | undefined;
  /** human-readable memory report */
  describe(): string;
  dispose(): void;
}
