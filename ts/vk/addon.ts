/** Loads the native Vulkan addon and gives it types. Argument checking happens here, not in C++. */
import * as fs from 'node:fs';
import { createRequire } from 'node:module';
import { ADDON_PATH } from '../paths.js';

export interface VkDeviceInfo {
  index: number;
  name: string;
  type: 'discrete' | 'integrated' | 'cpu' | 'virtual' | 'other';
  driver: string;
  apiVersion: string;
  vendorId: number;
  subgroupSize: number;
  /** compute-stage subgroup arithmetic, vote and shuffle operations (the shaders need them) */
  subgroupOps: boolean;
  maxStorageBufferRange: number;
  maxWorkGroupInvocations: number;
  unifiedMemory: boolean;
  externalMemoryHost: boolean;
  storage8bit: boolean;
  storage16bit: boolean;
  float16: boolean;
  int8: boolean;
  /** packed 4×8-bit integer dot products: available, and in hardware */
  integerDot: boolean;
  integerDotAccelerated: boolean;
  /** matrix units the engine uses (VK_KHR_cooperative_matrix, 16 × 16 × 16 f16 → f32, 32-lane subgroups), and every subgroup-scope shape listed */
  coopmat: boolean;
  coopmatShapes: string;
  heaps: { size: number; deviceLocal: boolean }[];
}

/** One Vulkan device: buffers, pipelines and recorded command sequences, by integer id. */
export interface VkDevice {
  info(): {
    name: string; type: string; driver: string; subgroupSize: number; subgroupOps: boolean; maxStorageBufferRange: number;
    /** VkSubgroupFeatureFlags of compute subgroups; bytes of shared memory per workgroup */
    subgroupFeatures: number; maxComputeSharedMemorySize: number;
    minStorageBufferOffsetAlignment: number; unifiedMemory: boolean; deviceLocalBytes: number;
    /** VK_EXT_memory_budget's budget of the device-local heaps when info() was called (0 without the extension) */
    memoryBudgetBytes: number;
    /** VK_EXT_external_memory_host and its minImportedHostPointerAlignment (0 without it) */
    externalMemoryHost: boolean; importAlignment: number;
    /** VK_KHR_shader_integer_dot_product enabled (mvq.comp); its packed 4×8-bit signed dot in hardware (not emulated) */
    integerDot: boolean; integerDotAccelerated: boolean;
    /** f16 arithmetic (shaderFloat16), enabled where the device has it (the matrix units' kernels, the packed-f16 tiles mmh) */
    float16: boolean;
    /**
     * VK_KHR_cooperative_matrix enabled with 16 × 16 × 16 f16 → f32 subgroup products, shaderFloat16
     * and 32-lane subgroups (the mmc kernels); every subgroup-scope shape the driver lists
     */
    coopmat: boolean; coopmatShapes: string;
    /** VK_KHR_cooperative_matrix at any shape, enabled on the device (checks run other shapes' modules: scripts/check/mmc-lavapipe.ts) */
    cooperativeMatrix: boolean;
    /** VK_KHR_workgroup_memory_explicit_layout with 16-bit access: aliased shared blocks (the attn_mma experiment, scripts/experiments/attn) */
    sharedBlocks: boolean;
    /** arrays of storage buffers indexed by a workgroup's row (the batched step's _rows kernels), and the storage buffers one pipeline may bind */
    bufferArrays: boolean; maxStageStorageBuffers: number;
  };
  createBuffer(bytes: number, hostVisible: boolean): number;
  /** a byte range of a buffer (offset a multiple of minStorageBufferOffsetAlignment), bindable like a buffer */
  createView(buffer: number, offset: number, bytes: number): number;
  /**
   * A read-only buffer whose memory is bytes [offset, offset + bytes) of the file (zero-copy,
   * VK_EXT_external_memory_host); offset a multiple of importAlignment. Bind parts with createView.
   */
  importFile(path: string, offset: number, bytes: number): number;
  freeBuffer(id: number): void;
  write(id: number, offset: number, data: Uint8Array): void;
  /** a host-visible buffer's own memory (no copy), valid until the buffer is freed */
  mapped(id: number): ArrayBuffer;
  /** (dstOffset, srcOffset, bytes) triples from one buffer into another, one submission */
  copyRegions(dst: number, src: number, regions: Float64Array): void;
  read(id: number, offset: number, length: number): ArrayBuffer;
  /** counts: buffers of each binding (an array binding's length, else 1; default 1 each) */
  createPipeline(shader: string, bindings: number, pushBytes: number, counts?: number[]): number;
  /**
   * The driver's compiler statistics for a shader ([name, value] pairs: registers, instruction
   * counts, spills, whatever the driver reports; VK_KHR_pipeline_executable_properties). Throws
   * on a device without the extension. For kernel tuning (bench-matvec-bw --stats).
   */
  pipelineStats(shader: string, bindings: number, pushBytes: number, counts?: number[]): [string, string][];
  /** ops: per dispatch [pipeline, nBuffers, buffers…, nPushWords, push…, gx, gy, gz, flags(bit0 barrier)] */
  record(ops: Uint32Array, profile?: boolean): number;
  /** GPU nanoseconds per dispatch of the last run of a command recorded with profile = true */
  timings(command: number): Float64Array;
  run(command: number): Promise<void>;
  runSync(command: number): void;
  freeCommand(command: number): void;
  dispose(): void;
}

export interface VkAddon {
  Device: new (index: number) => VkDevice;
  listDevices(): VkDeviceInfo[];
  shaderNames(): string[];
  /** each embedded module's interface as its SPIR-V declares it (reflected at build time) */
  /** counts: buffers of each binding the module uses (an array binding's length), 0 where the optimizer dropped it */
  shaders(): { name: string; bindings: number; push: number; local: [number, number, number]; counts: number[] }[];
  /**
   * A SPIR-V module beside the embedded ones (experiments and tests bring their own shaders:
   * scripts/experiments/lib/shaders.ts), with its reflected interface; the same name again with the same
   * words is a no-op
   */
  addShader(name: string, words: Uint32Array, bindings: number, push: number, local: [number, number, number], counts: number[]): void;
}

let addon: VkAddon | undefined;

export function loadAddon(): VkAddon {
  if (!addon) {
    if (!fs.existsSync(ADDON_PATH)) throw new Error(`${ADDON_PATH} is missing: run "npm run build" first`);
    addon = createRequire(import.meta.url)(ADDON_PATH) as VkAddon;
  }
  return addon;
}
