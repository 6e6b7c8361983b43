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
import type { EngineOutputs } from './outputs.js';

/** A recorded step: one command per segment (graph.ts), each ending after a streamed layer's routing but the last. */
export interface RecordedStep { cmds: number[]; layers: number[]; names: string[][] }
import type { VkWeights } from './weights.js';
import type { EngineBuffers } from './scratch.js';
export type { MatvecOpts } from './matvec-recorder.js';

export interface DraftCheckpoints { conv: number; state: number; convRows: number[]; stateRows: number[] }

export type { OutputOwner } from './outputs.js';

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
  /** the prefill DeltaNet walk's module (limits.ts deltanetWalk: by the subgroup size) */
  readonly deltanetWalk: 'deltanet_chunk' | 'deltanet_chunk_p16';
  /** multi-token steps' attention runs on the matrix units (the memory plan's matrixAttn: its decoded operands are allocated) */
  readonly matrixAttn: boolean;
  /** the products of a step as dispatches (matvec-recorder.ts): one weight, decode's stacks, the router with its routing */
  readonly mv: MatvecRecorder;
  /** the engine-wide output buffers and who owns them (outputs.ts): claims, the grammar mask, top-k, a masked arg-max */
  readonly out: EngineOutputs;
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
  /** the embedding rows of tokens into dst (rows of nEmbd floats) */
  embedInto(tokens: number[], dst: Float32Array): void;
  /** the step input buffer XIN's first rows, host memory written in place (the step_in dispatch reads it) */
  stepInput(rows: number): Float32Array;
  /** the next step's tokens' input rows, decoded into a host array while a step runs (one for the engine; never throws) */
  prepareInput(tokens: number[]): void;
  /** those rows when they are exactly tokens' (taken: held no longer), else undefined */
  takePrepared(tokens: number[]): Float32Array | undefined;
  /** SSD streaming: whether layer l's routed experts stream (its step segment ends after routing) */
  streams(l: number): boolean;
  /** runs a recorded step (its segments, with the streamed layers' expert loads between them) */
  runStep(step: RecordedStep, T: number): Promise<void>;
  sampleWith(logits: Float32Array, o: SampleOptions, rng: number): number;
  /** a session's buffers are about to be freed (batched steps recorded with them go) */
  forgetSession(id: number): void;
  /** a step ran: wall ms inside dev.run, and its per-dispatch GPU times when profiling */
  reportRun(ms: number, profile?: { names: string[]; ns: Float64Array }): void;
}
