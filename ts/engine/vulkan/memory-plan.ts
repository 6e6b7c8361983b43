/**
 * The Vulkan engine's memory plan, from the model file's tensor table, the options and the device's
 * reported properties alone (no device calls): how weights reach the GPU, the prefill step, the
 * batched rows, the bytes of weights, KV/state and scratch, and with SSD streaming the expert
 * cache's slots. The engine loads by it; a test plans the README's presets against a simulated
 * BC-250 (a 16 GB unified device) without one. A plan that cannot fit throws, with the numbers and
 * the flag to change.
 */
import { rowBytes, type GgufFile } from '../../gguf/index.js';
import type { ModelShape } from '../../model/shape.js';
import { isRoutedExpert, layerOf } from '../../model/schema.js';
import type { VkDevice } from '../../vk/addon.js';
import { KV_TYPE_IDS } from '../common.js';
import { DEFAULT_KV, MAX_BATCH_ROWS, STREAMING, vulkanChunk } from '../defaults.js';
import { minExpertSlots } from '../expert-cache.js';
import { stateSizes } from '../payload.js';
import type { EngineOptions, KvType } from '../types.js';
import { attnOnMatrixUnits } from './attn-decoded.js';
import { batchProblem } from './batch-step.js';
import { attnTileFits } from './graph.js';
import { slotLayout, splitSlots, type SlotLayout } from './expert-stream.js';
import { scratchBytes, scratchTable, type ScratchBuffer } from './scratch.js';
import { weightBytesEstimate, type InputProjection, type WeightMode } from './weights.js';

export type DeviceInfo = ReturnType<VkDevice['info']>;

export interface StreamPlan { slots: number[]; fullLayers: number; layout: SlotLayout; budget?: number }

export interface MemoryPlan {
  kv: { k: KvType; v: KvType };
  /** zero-copy import or upload; auto: nobody chose */
  mode: WeightMode;
  auto: boolean;
  /** prefill step tokens; rows of all-position logits a step keeps; PARAMS words per row */
  chunk: number;
  logitsRows: number;
  paramWords: number;
  batchRows: number;
  batchIssue?: string;
  /** rows a draft step (speculative decoding: a token and its drafts, one session) may hold: 1 none */
  draftRows: number;
  /** why draft steps were asked for and are not available */
  draftIssue?: string;
  streaming: boolean;
  /** input row width in embedding widths (scratch.ts inputWidth): 2 for an MTP head */
  inputWidth: number;
  /** prefill attention on the matrix units (attn-decoded.ts): scratch for its decoded operands */
  matrixAttn: boolean;
  /** one session's KV cache, recurrent state and RoPE table */
  sessionBytes: number;
  /** bytes the device holds: weights copied into allocations, every session, scratch */
  weightBytes: number;
  /**
   * weights imported from the file (zero-copy): counted in the plan on unified memory, where the
   * file's pinned pages take the same memory as the allocations (a discrete GPU imports nothing)
   */
  importedBytes: number;
  sessionsBytes: number;
  scratchBytes: number;
  /** the expert cache (SSD streaming) */
  cacheBytes: number;
  /** what the plan may use: 95% of the device memory (or of the budget, streaming) */
  capacityBytes: number;
  stream?: StreamPlan;
}

/** The scratch buffers a plan allocates (scratch.ts). */
export function planScratch(shape: ModelShape, options: EngineOptions, info: DeviceInfo, p: Pick<MemoryPlan, 'chunk' | 'logitsRows' | 'batchRows' | 'draftRows' | 'paramWords' | 'streaming' | 'inputWidth' | 'matrixAttn'>): ScratchBuffer[] {
  return scratchTable(shape, { T: p.chunk, ctx: options.ctx, logitsRows: p.logitsRows, steering: !!options.steering, unified: info.unifiedMemory, batch: Math.max(p.batchRows, p.draftRows), drafts: p.draftRows - 1, paramWords: p.paramWords, streaming: p.streaming, inputWidth: p.inputWidth, matrixAttn: p.matrixAttn });
}

/** SSD streaming: the routed-expert tensors left out of the resident weights (layers ≥ full). */
export function streamedTensors(full: number): (name: string) => boolean {
  return (name) => isRoutedExpert(name) && layerOf(name) >= full;
}

/** One session's device bytes: the RoPE table, each attention layer's K and V rows, each DeltaNet layer's state. */
export function sessionBytes(shape: ModelShape, ctx: number, kv: { k: KvType; v: KvType }): number {
  const st = stateSizes(shape);
  let b = ctx * (shape.nRot / 2) * 8;
  for (const r of shape.recurrent) b += r ? st.convBytes + st.ssmBytes : ctx * (rowBytes(KV_TYPE_IDS[kv.k], st.kvDim) + rowBytes(KV_TYPE_IDS[kv.v], st.kvDim));
  return b;
}

/**
 * Zero-copy import of the file where the GPU shares host memory and the driver can import it;
 * upload to device-local memory otherwise (on a discrete GPU imported memory would be read across
 * PCIe every token). vkWeights (--vk-weights, Q36_VK_WEIGHTS) overrides.
 */
export function weightMode(info: DeviceInfo, want: EngineOptions['vkWeights'] = 'auto'): { mode: WeightMode; auto: boolean } {
  if (!['auto', 'import', 'upload'].includes(want)) throw new Error(`vkWeights must be auto, import or upload (got "${want}")`);
  const canImport = info.externalMemoryHost && info.importAlignment > 0;
  if (want === 'import' && !canImport) throw new Error(`--vk-weights import: ${info.name} does not support VK_EXT_external_memory_host`);
  if (want === 'auto') return { mode: canImport && info.unifiedMemory ? 'import' : 'upload', auto: true };
  return { mode: want, auto: false };
}

/** What the engine decided before planning: an MTP head's input projection, prefill on the matrix units (limits.ts prefillPath). */
export interface PlanInputs { head?: InputProjection; coopmat?: boolean }

/** The plan for this file, options and device (info: deviceLocalBytes already the --vk-memory-limit where given). */
export function planMemory(file: GgufFile, shape: ModelShape, options: EngineOptions, info: DeviceInfo, inputs: PlanInputs = {}): MemoryPlan {
  const { head } = inputs;
  const s = shape;
  const kv = options.kvTypes ?? DEFAULT_KV.vulkan;
  // the prefill step follows the device's memory unless the caller chose one
  const chunk = options.chunk ?? vulkanChunk(info);
  // all-position logits (test vectors, log-probabilities) for as many rows of a step as 64 MiB
  // holds: a whole 512-token step of a 248K vocabulary would take 485 MiB (67 rows fit)
  const logitsRows = Math.max(1, Math.min(chunk, Math.floor((64 << 20) / (s.nVocab * 4))));
  // batched decode steps: one PARAMS row per session at the device's binding alignment
  const paramWords = Math.max(4, info.minStorageBufferOffsetAlignment / 4);
  const want = Math.floor(options.batchRows ?? 1);
  if (!(want >= 1)) throw new Error(`batchRows must be a positive integer (got ${options.batchRows})`);
  const rows = Math.min(want, MAX_BATCH_ROWS, chunk, logitsRows);
  const streaming = options.streamExperts === true;
  const batchIssue = rows > 1 ? (streaming ? 'SSD streaming loads each session\'s experts per step' : batchProblem(info)) : undefined;
  const batchRows = batchIssue ? 1 : rows;
  // draft steps run as a batched step's rows (one session's): the same kernels and limits
  const drafts = Math.floor(options.draftMax ?? 0);
  if (!(drafts >= 0)) throw new Error(`draftMax must be a whole number of tokens (got ${options.draftMax})`);
  if (drafts + 1 > MAX_BATCH_ROWS) throw new Error(`a draft step verifies at most ${MAX_BATCH_ROWS - 1} drafted tokens (asked ${drafts})`);
  const dRows = Math.min(drafts + 1, chunk, logitsRows);
  const draftIssue = dRows > 1 ? (streaming ? 'SSD streaming loads the experts of one token per step' : batchProblem(info)) : undefined;
  const draftRows = draftIssue ? 1 : dRows;
  const { mode, auto } = weightMode(info, options.vkWeights);
  const one = sessionBytes(s, options.ctx, kv);
  const p: MemoryPlan = {
    kv, mode, auto, chunk, logitsRows, paramWords, batchRows, batchIssue, draftRows, draftIssue, streaming, inputWidth: head ? 2 : 1, sessionBytes: one,
    // as the step decides it (step.ts): tiles on, a shape they fit, a K exact in f16
    matrixAttn: attnOnMatrixUnits(inputs.coopmat ?? false, kv.k) && options.vkAttnTile !== false && attnTileFits(s),
    weightBytes: 0, importedBytes: 0, sessionsBytes: 0, scratchBytes: 0, cacheBytes: 0, capacityBytes: 0,
  };
  const full = streaming ? Math.min(options.expertFullLayers ?? 0, s.nLayer) : 0;
  const w = weightBytesEstimate(file, s, mode, streaming ? streamedTensors(full) : undefined, head ? [head.weight] : []);
  p.weightBytes = w.copied;
  // imported weights are the file's pages: on unified memory the same memory as everything else
  p.importedBytes = info.unifiedMemory ? w.imported : 0;
  p.scratchBytes = scratchBytes(planScratch(s, options, info, p));
  const n = options.sessions ?? 1;
  p.sessionsBytes = n * one;
  const total = p.weightBytes + p.importedBytes + p.scratchBytes + p.sessionsBytes;
  if (streaming) {
    // the cache takes what the device can give now: VK_EXT_memory_budget's budget where the
    // driver has it (other processes' use counted), else the heap size; --vk-memory-limit wins
    const budget = options.vkMemoryLimit === undefined && info.memoryBudgetBytes > 0 ? Math.min(info.deviceLocalBytes, info.memoryBudgetBytes) : undefined;
    p.capacityBytes = (budget ?? info.deviceLocalBytes) * 0.95;
    p.stream = planStreaming(file, s, options, info, { left: p.capacityBytes - total, weights: p.weightBytes + p.importedBytes, scratch: p.scratchBytes, sessions: p.sessionsBytes, full, budget, chunk });
    p.cacheBytes = p.stream.slots.reduce((a, k, i) => a + k * p.stream!.layout.classes[i].slotBytes, 0);
    return p;
  }
  p.capacityBytes = info.deviceLocalBytes * 0.95;
  if (total > p.capacityBytes) {
    throw new Error(`model does not fit ${info.name}: weights ${((p.weightBytes + p.importedBytes) / 2 ** 30).toFixed(2)} GiB${p.importedBytes ? ` (${(p.importedBytes / 2 ** 30).toFixed(2)} GiB of them mapped from the file)` : ''} + KV/state ${(p.sessionsBytes / 2 ** 30).toFixed(2)} GiB (ctx ${options.ctx}${n > 1 ? ` × ${n} sessions` : ''}) + scratch ${(p.scratchBytes / 2 ** 30).toFixed(2)} GiB > ${(info.deviceLocalBytes / 2 ** 30).toFixed(2)} GiB device memory${options.vkMemoryLimit !== undefined ? ' (--vk-memory-limit)' : ''}: lower --ctx${n > 1 ? ' or --batched-session' : ''}, use -ctk q8_0 -ctv q4_0${p.scratchBytes > one ? ` or a smaller prefill chunk (${chunk} tokens)` : ''}, or stream the routed experts from the file (--ssd-streaming)`);
  }
  return p;
}

/** The expert cache's slots: as asked, else STREAMING.cacheFraction of what is left; at least one layer's experts. */
function planStreaming(file: GgufFile, s: ModelShape, o2: EngineOptions, info: DeviceInfo, o: { left: number; weights: number; scratch: number; sessions: number; full: number; budget?: number; chunk: number }): StreamPlan {
  const MiB = (b: number) => `${(b / 2 ** 20).toFixed(1)} MiB`;
  if (!(Number.isInteger(o.full) && o.full >= 0)) throw new Error(`expertFullLayers must be a whole number of layers (got ${o2.expertFullLayers})`);
  const min = minExpertSlots({ ...s, fullLayers: o.full, chunk: o.chunk });
  const ask = o2.expertCacheSlots !== undefined ? { slots: o2.expertCacheSlots } : { bytes: o2.expertCacheMiB !== undefined ? o2.expertCacheMiB * 2 ** 20 : Math.max(0, STREAMING.cacheFraction * o.left) };
  // slots of each layer's own size where the cache holds a layer's worth of each size, else
  // one size for all (the largest: the smallest cache that still works)
  let layout = slotLayout(file, s, o.full);
  let slots = splitSlots(layout.classes, s.nExpert, min, ask);
  if (layout.classes.length > 1 && slots.some((n) => n < min)) {
    layout = slotLayout(file, s, o.full, true);
    slots = splitSlots(layout.classes, s.nExpert, min, ask);
  }
  const { classes } = layout;
  const cost = (n: number[]) => n.reduce((a, k, i) => a + k * classes[i].slotBytes, 0);
  const total = slots.reduce((a, b) => a + b, 0), bytes = cost(slots);
  const asked = o2.expertCacheSlots !== undefined ? bytes : o2.expertCacheMiB !== undefined ? o2.expertCacheMiB * 2 ** 20 : undefined;
  const need = classes.map(() => min), needBytes = cost(need), needSlots = min * classes.length;
  const used = `${MiB(o.weights)} of resident weights${o.full ? ` (with layers 0-${o.full - 1}'s experts)` : ''}, ${MiB(o.sessions)} of KV/state and ${MiB(o.scratch)} of scratch`;
  if (slots.some((n) => n < min)) {
    const per = classes.length > 1 ? ` (one layer's worth in each of ${classes.length} slot sizes)` : '';
    if (asked !== undefined && asked <= o.left) {
      throw new Error(`an expert cache of ${total} slots (${MiB(asked)} asked) cannot hold one layer's experts: need ${needSlots} expert slots = ${MiB(needBytes)}${per} (raise --ssd-streaming-cache-experts)`);
    }
    throw new Error(`${info.name}: ${MiB(Math.max(0, o.left))} of device memory left after ${used}${o.full ? ` (--ssd-streaming-full-layers ${o.full})` : ''}; ` +
      `the expert cache needs at least ${needSlots} slots = ${MiB(needBytes)}, one layer's experts${per}${o.full ? ': lower --ssd-streaming-full-layers' : ''}, lower --ctx or use -ctk q8_0 -ctv q4_0`);
  }
  if (bytes > o.left) {
    throw new Error(`an expert cache of ${total} slots = ${MiB(bytes)} does not fit ${info.name}: ${MiB(Math.max(0, o.left))} left after ${used}`);
  }
  return { slots, fullLayers: o.full, layout, budget: o.budget };
}

/** Everything a plan holds on the device: weights (copied, and imported on unified memory), sessions, scratch, the expert cache. */
export function plannedBytes(p: MemoryPlan): number {
  return p.weightBytes + p.importedBytes + p.sessionsBytes + p.scratchBytes + p.cacheBytes;
}

/** The startup line of a plan: its total against what it may use, by part. */
export function describePlan(p: MemoryPlan, info: DeviceInfo, sessions: number): string {
  const G = (b: number) => `${(b / 2 ** 30).toFixed(2)} GiB`;
  const total = plannedBytes(p);
  return `memory    plan ${G(total)} of ${G(p.capacityBytes)} (95% of ${p.streaming && p.stream?.budget !== undefined ? 'the driver\'s budget' : `${G(info.deviceLocalBytes)}`}): ` +
    `weights ${G(p.weightBytes)} copied${p.importedBytes ? ` + ${G(p.importedBytes)} mapped from the file (unified memory: counted)` : ''}, ` +
    `KV/state ${G(p.sessionsBytes)}${sessions > 1 ? ` (${sessions} sessions)` : ''}, scratch ${G(p.scratchBytes)}${p.streaming ? `, expert cache ${G(p.cacheBytes)}` : ''}`;
}
