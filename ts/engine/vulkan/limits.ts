/**
 * What the Vulkan kernels can compute, checked at load: a model or device past a limit is refused
 * with an error naming the parameter and the limit, never loaded to compute something else.
 * The geometry sweep (scripts/lib/geometries.ts) runs every limit's boundary.
 */
import type { ModelShape } from '../../model/shape.js';
import type { VkDevice } from '../../vk/addon.js';
import { VK_TUNING } from './tuning.js';

type DeviceInfo = ReturnType<VkDevice['info']>;

/** The first limit this model's shape exceeds, as a message, or undefined. */
export function shapeProblem(s: ModelShape): string | undefined {
  // attn_flash keeps the rows of one KV head's G query heads in shared memory (≤ 8 heads, 2048
  // values) and splits a key row over 8 lanes of 4-element loads (head dim ≤ 256, a multiple of 32)
  if (s.headDim > 256) return `attention head dim ${s.headDim} exceeds 256`;
  if (s.headDim % 32 !== 0) return `attention head dim ${s.headDim} is not a multiple of 32`;
  if (s.nRot > s.headDim) return `rotary dims ${s.nRot} exceed the attention head dim ${s.headDim}`;
  const G = s.nHead / s.nHeadKv;
  if (G > 8 || G * s.headDim > 2048) return `${G} query heads of ${s.headDim} per KV head exceed 8 heads and 2048 values`;
  // deltanet.comp: a head's state in shared memory, lane quads over the key dim
  if (s.ssmHeadDim > 128) return `DeltaNet head dim ${s.ssmHeadDim} exceeds 128`;
  if (s.ssmHeadDim % 4 !== 0) return `DeltaNet head dim ${s.ssmHeadDim} is not a multiple of 4`;
  if (s.ssmConv > 8) return `a DeltaNet conv width of ${s.ssmConv} exceeds 8`;
  // moe_tiles.comp counts each expert's pairs in one workgroup's shared memory
  if (s.nExpert > 1024) return `${s.nExpert} experts exceed the 1024 that moe_tiles groups`;
  // the matvec kernels read activations 8 floats at a time: every matrix row length
  const rows: [string, number][] = [['embedding length', s.nEmbd], ['attention output (heads × head dim)', s.nHead * s.headDim],
    ['DeltaNet inner size', s.ssmInner], ['expert FFN length', s.nFfExp], ['shared-expert FFN length', s.nFfShexp]];
  for (const [what, n] of rows) if (n % 8 !== 0) return `${what} ${n} is not a multiple of 8`;
  return undefined;
}

/** The first device capability the kernels need that this device lacks (for this model), or undefined. */
export function deviceProblem(info: DeviceInfo, s: ModelShape): string | undefined {
  if (!info.subgroupOps) return 'the Vulkan backend needs subgroup arithmetic, vote and shuffle operations in compute shaders (Vulkan 1.1 subgroup features); this device does not report them';
  // deltanet_chunk: lane quads and at most 64 subgroups per 512-thread workgroup
  if (info.subgroupSize < 8) return `subgroup size ${info.subgroupSize} is below the 8 the Vulkan backend needs`;
  if (info.maxComputeSharedMemorySize < 32768) return `${info.maxComputeSharedMemorySize} bytes of compute shared memory, the Vulkan backend needs 32768`;
  // router.glsl keeps a token's expert logits in one subgroup's registers, 32 per lane
  if (s.nExpert > 32 * info.subgroupSize) return `${s.nExpert} experts exceed the router's 32 per subgroup lane (subgroup size ${info.subgroupSize})`;
  return undefined;
}

/** Compute shared memory the matrix-unit modules take at most (attn_mmc; the split-weight mmc forms at 128 rows a tile). */
export const MMC_SHARED_BYTES = 49152;

/**
 * Where prefill matmuls run: the matrix units (mmc, attn_mmc) where the device lists their shape
 * (`coopmat`, the addon's check), has their shared memory, the build has their modules and the
 * user did not switch them off; else the f32 tiles, with the reason.
 */
export function prefillPath(info: Pick<DeviceInfo, 'coopmat' | 'coopmatShapes' | 'maxComputeSharedMemorySize'>, o: { built: boolean; optOut: boolean }): { coopmat: boolean; why: string } {
  const why = !info.coopmat ? (info.coopmatShapes ? `the device's matrix shapes lack 16x16x16 f16->f32 (${info.coopmatShapes})` : 'the device has no usable matrix units (VK_KHR_cooperative_matrix, 32-lane subgroups)')
    : info.maxComputeSharedMemorySize < MMC_SHARED_BYTES ? `the device's ${info.maxComputeSharedMemorySize} bytes of compute shared memory are under the matrix-unit kernels' ${MMC_SHARED_BYTES}`
    : !o.built ? 'this build has no matrix-core kernels (bash scripts/build/glslc-coopmat.sh, then npm run build)'
    : o.optOut ? 'Q36_VK_COOPMAT=0' : '';
  return { coopmat: why === '', why };
}

/**
 * The packed-f16 tiles (mmh, opt-in: vkF16) in place of the f32 tiles: where they were asked for,
 * the matrix units are not taking the products and the device has f16 arithmetic; else why not.
 */
export function f16Tiles(info: Pick<DeviceInfo, 'float16'>, o: { asked: boolean; coopmat: boolean; built: boolean }): { f16: boolean; why: string } {
  const why = !o.asked ? 'not asked (Q36_VK_F16=1)' : o.coopmat ? 'the matrix units take the products' : !info.float16 ? 'the device has no f16 arithmetic (shaderFloat16)'
    : !o.built ? 'this build has no packed-f16 kernels (npm run build)' : '';
  return { f16: why === '', why };
}

/**
 * The prefill DeltaNet walk's module: 16 row parts a value column (deltanet_chunk_p16) where the
 * subgroup holds a column's 16 lanes (VK_TUNING.deltanetRowParts), else 8 (deltanet_chunk).
 */
export function deltanetWalk(info: Pick<DeviceInfo, 'subgroupSize'>): 'deltanet_chunk' | 'deltanet_chunk_p16' {
  return VK_TUNING.deltanetRowParts === 16 && info.subgroupSize >= 16 ? 'deltanet_chunk_p16' : 'deltanet_chunk';
}
