/**
 * What a Vulkan session may use of its engine: the device, the weights and scratch buffers, the
 * matvec recorder, and two reports (a finished run, and who owns the engine-wide output buffers).
 * Sessions see the engine only through this interface, so the session module does not import
 * the engine's and no session writes engine fields.
 */
import type { Core } from '../../core/wasm.js';
import type { ModelShape } from '../../model/shape.js';
import type { VkDevice } from '../../vk/addon.js';
import type { EngineOptions, KvType, SampleOptions, TokenMask } from '../types.js';
import type { Pipelines } from './graph.js';
import type { MatvecRecorder } from './matvec-recorder.js';

/** A recorded step: one command per segment (graph.ts), each ending after a streamed layer's routing but the last. */
export interface RecordedStep { cmds: number[]; layers: number[]; names: string[][] }
import type { VkWeights } from './weights.js';
import type { EngineBuffers } from './scratch.js';
export type { MatvecOpts } from './matvec-recorder.js';

export interface DraftCheckpoints { conv: number; state: number; convRows: number[]; stateRows: number[] }

/** A session that can save its deferred logits row before another session overwrites it. */
export interface OutputOwner { keep(): void }

export interface VkHost {
  readonly shape: ModelShape;
  readonly options: EngineOptions;
  readonly dev: VkDevice;
  readonly pipes: Pipelines;
  readonly core: Core;
  readonly w: VkWeights;
  /** packed integer dot products available and enabled: norms write int8 levels for mvq.comp */
  readonly mvq: boolean;
  /** and the dense products over the norms' outputs too (not only the routed experts) */
  readonly mvqDense: boolean;
  /** the tiled prefill matmuls run on the matrix units (mmc, mmc_moe: moePairs() pairs a tile) */
  readonly coopmat: boolean;
  /** the products of a step as dispatches (matvec-recorder.ts): one weight, decode's stacks, the router with its routing */
  readonly mv: MatvecRecorder;
  /** engine-wide scratch buffers by name (scratch.ts) */
  readonly buf: Readonly<EngineBuffers>;
  readonly kv: { k: KvType; v: KvType };
  /** tokens per prefill step; logits rows one step may return */
  readonly chunk: number;
  readonly logitsRows: number;
  /** words from one row's step parameters to the next in PIN/PARAMS (the device's binding alignment) */
  readonly paramWords: number;
  /** row i's PARAMS row (a view paramWords apart): a batched or draft step's rows */
  paramRow(i: number): number;
  /** rows a draft step may hold (a token and its drafts; 1: none) */
  readonly draftRows: number;
  /**
   * Recurrent layer l's state checkpoints of a draft step (CKC, CKS): the conv histories and the
   * DeltaNet states after each row but the last (what ssm_conv / deltanet write with ckRows), and
   * each row's as its own view (the copy back)
   */
  draftCheckpoints(l: number): DraftCheckpoints;
  embed(tokens: number[]): Float32Array;
  /** SSD streaming: whether layer l's routed experts stream (its step segment ends after routing) */
  streams(l: number): boolean;
  /** runs a recorded step (its segments, with the streamed layers' expert loads between them) */
  runStep(step: RecordedStep, T: number): Promise<void>;
  /**
   * the grammar mask the next step's arg-max applies to its row 0 (argmax.comp), or none; written
   * only when it changes
   */
  setMask(mask: TokenMask | undefined): void;
  /** the arg-max of LOGITS row 0 again under a grammar mask, into ARG row 0 */
  argmaxMasked(mask: TokenMask): void;
  /** the k best (logit, id) pairs of LOGITS row `row` */
  topK(k: number, row?: number): Uint32Array;
  /** the pairs the last top-k left in TKH (a step that ran the stages itself) */
  readTopK(k: number): Uint32Array;
  sampleWith(logits: Float32Array, o: SampleOptions, rng: number): number;
  /**
   * The LOGITS/ARG buffers are engine-wide: `s` is about to overwrite them (the previous owner
   * saves its deferred row first); `defer` marks s as leaving its last row there.
   */
  claimOutputs(s: OutputOwner, defer: boolean): void;
  /** a batched step is about to overwrite them: every owner but its rows saves its row; the rows own them after */
  claimOutputsFor(rows: OutputOwner[]): void;
  /** whether s still owns the outputs (its deferred row is on the device) */
  ownsOutputs(s: OutputOwner): boolean;
  /** s is gone: it owns nothing */
  releaseOutputs(s: OutputOwner): void;
  /** a session's buffers are about to be freed (batched steps recorded with them go) */
  forgetSession(id: number): void;
  /** a step ran: wall ms inside dev.run, and its per-dispatch GPU times when profiling */
  reportRun(ms: number, profile?: { names: string[]; ns: Float64Array }): void;
}
