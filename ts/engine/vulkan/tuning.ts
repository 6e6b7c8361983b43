/**
 * The Vulkan engine's tuning knobs, declared once: the thresholds and per-type choices by which
 * graph.ts picks a kernel form and a workgroup shape. Each is a choice between forms that compute
 * the same bits (a row's sums do not depend on the form) measured faster on a GPU; the
 * measurements behind each value are docs/vulkan.md's "Kernel choices" table. Sizes that mirror a
 * shader (tile shapes, rows a workgroup, DeltaNet's block) are not knobs: they live beside the
 * dispatch code that must agree with the shader (graph.ts, kernels.ts).
 */
export const VK_TUNING = {
  /**
   * Workgroups a one-activation-row matvec should reach: it takes 4, 2 or 1 output rows a
   * workgroup, the most that still gives this many (a short matrix in 4-row workgroups leaves most
   * multiprocessors with too few loads in flight; a long one runs faster with 4)
   */
  matvecMinGroups: 2048,
  /** the same for mv.comp (32-weight units a thread: 4× a matvec thread's share a trip): half */
  mvMinGroups: 1024,
  /** weight types whose 5-8 activation rows run as two 4-row matmul workgroups rather than one 8-row one (a cheap decode, done twice) */
  split8Types: ['q8_0'] as readonly string[],
  /** weight types with int8-level forms (mvq, mvq2, mvq4): the q2 recipes' types, each faster than matvec where the dot is accelerated */
  mvqTypes: ['iq2_xxs', 'q8_0', 'q2_k'] as readonly string[],
  /** fewest activation rows, and weight rows, for which the dense tiled matmul beats the 8-row matmul */
  mmMinRows: 16,
  mmMinWeightRows: 64,
  /** pairs a tile of mmc_moe (the matrix units' expert matmul; its modules' BN): 32, half the dense tile, fewer registers and
   * fewer empty slots than 64 at 512 to 2048 tokens (docs/vulkan.md) */
  mmcMoePairs: 32,
  /** prefill tokens a dispatch pair of attention + attn_merge: 64, or 256 for chunks of 2048 and more (fuller last waves at depth; 4× the partials) */
  attnTokens: 64,
  attnTokensLarge: 256,
  attnTokensLargeFrom: 2048,
  /** and on the matrix units (attn_decode + attn_mmc, whose partials take 1024-key blocks): 512 a pair (docs/vulkan.md) */
  attnTokensUnits: 512,
  /**
   * row parts a value column of the prefill DeltaNet walk (its threads: 32 columns × this): 16
   * (deltanet_chunk_p16, where subgroups have 16 lanes: limits.ts deltanetWalk) or 8
   */
  deltanetRowParts: 16 as 8 | 16,
} as const;
