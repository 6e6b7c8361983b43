/**
 * Model geometries a qwen35moe GGUF may legally carry, for the Vulkan-vs-CPU sweep: hidden sizes,
 * query/KV head ratios (one KV head, odd ratios), attention and DeltaNet head sizes, rotary dims,
 * conv widths, expert counts and top-k (odd ones too), FFN sizes that are not multiples of 64,
 * full-attention intervals 2…4. `refuse` marks geometries past a Vulkan kernel's limits: the
 * engine must refuse them at load with an error naming the parameter (the regex).
 */
import { PRESETS, type Geometry, type Recipe } from '../../ts/model/synthetic-model.js';

export interface SweepGeometry {
  name: string;
  geometry: Geometry;
  recipe: Recipe;
  /** the Vulkan engine must refuse the file at load, naming this */
  refuse?: RegExp;
}

const base = PRESETS.tiny;
const g = (o: Partial<Geometry>): Geometry => {
  const x = { ...base, ...o };
  return { ...x, ssmInner: x.ssmVHeads * x.ssmHeadDim };
};

export const SWEEP: SweepGeometry[] = [
  { name: 'tinyA shape', geometry: g({}), recipe: 'q8_0' },
  { name: 'hidden 128, 2 q heads / 1 kv head of 128, rotary 32, interval 2', recipe: 'q8_0',
    geometry: g({ nEmbd: 128, nHead: 2, nHeadKv: 1, headDim: 128, nRot: 32, fullAttentionInterval: 2, nFfExp: 96, nFfShexp: 128 }) },
  { name: 'hidden 320, 5 q heads / 1 kv head (G = 5), full rotary, 5 experts top-3, ffn 96/160, interval 2', recipe: 'q8_0',
    geometry: g({ nEmbd: 320, nHead: 5, nHeadKv: 1, headDim: 64, nRot: 64, nExpert: 5, nExpertUsed: 3, nFfExp: 96, nFfShexp: 160, fullAttentionInterval: 2 }) },
  { name: 'head dim 256 (G = 3), DeltaNet 1 key / 3 value heads of 32, conv 3, 16 experts top-4, interval 3', recipe: 'q8_0',
    geometry: g({ nHead: 6, nHeadKv: 2, headDim: 256, nRot: 64, ssmKHeads: 1, ssmVHeads: 3, ssmHeadDim: 32, ssmConv: 3, nExpert: 16, nExpertUsed: 4, nFfExp: 160, nLayer: 3, fullAttentionInterval: 3 }) },
  { name: 'DeltaNet head dim 48 (a partial 32-column slice), 3 key / 6 value heads, 7 experts top-1', recipe: 'q8_0',
    geometry: g({ ssmKHeads: 3, ssmVHeads: 6, ssmHeadDim: 48, nExpert: 7, nExpertUsed: 1 }) },
  { name: 'DeltaNet 4 key / 4 value heads of 128, head dim 96, 4 experts top-4, conv 2', recipe: 'q8_0',
    geometry: g({ ssmKHeads: 4, ssmVHeads: 4, ssmHeadDim: 128, headDim: 96, nRot: 32, nExpert: 4, nExpertUsed: 4, ssmConv: 2 }) },
  { name: '8 q heads / 1 kv head of 256 (G·dim = 2048), DeltaNet dim 96, 9 experts top-2, conv 8', recipe: 'q8_0',
    geometry: g({ nHead: 8, nHeadKv: 1, headDim: 256, nRot: 64, ssmHeadDim: 96, ssmKHeads: 2, ssmVHeads: 4, nExpert: 9, nExpertUsed: 2, ssmConv: 8 }) },
  { name: 'BF16, ffn 72 and hidden 200 (rows of multiples of 8, not of 32)', recipe: 'bf16',
    geometry: g({ nEmbd: 200, nFfExp: 72, nFfShexp: 40, nHead: 4, nHeadKv: 4, headDim: 64, nRot: 16 }) },
  { name: 'DeltaNet head dim 36 (not a multiple of 8), 2 key / 2 value heads, one expert top-1', recipe: 'bf16',
    geometry: g({ ssmKHeads: 2, ssmVHeads: 2, ssmHeadDim: 36, nExpert: 1, nExpertUsed: 1 }) },
  // top-k above a lavapipe subgroup (8): router.glsl's path for K > subgroup size (one lane writes)
  { name: '11 experts top-9 (more winners than lanes in a lavapipe subgroup)', recipe: 'q8_0',
    geometry: g({ nExpert: 11, nExpertUsed: 9 }) },
  // tinyA's shape with every block type (recipe mixed: gate/up of different types, unstackable
  // projections) and the IQ2_M / IQ1_M-like community mixes (fused gate+up of IQ2_S / IQ1_M)
  { name: 'every block type (recipe mixed)', recipe: 'mixed', geometry: g({}) },
  { name: 'IQ2_M-like mix', recipe: 'iq2m', geometry: g({}) },
  { name: 'IQ1_M-like mix', recipe: 'iq1m', geometry: g({}) },
  // past the kernels' limits: refused by name
  { name: 'attention head dim 512', recipe: 'q8_0', refuse: /attention head dim 512 exceeds 256/,
    geometry: g({ headDim: 512, nRot: 64, nHead: 2, nHeadKv: 1 }) },
  { name: 'attention head dim 80', recipe: 'q8_0', refuse: /attention head dim 80 is not a multiple of 32/,
    geometry: g({ headDim: 80, nRot: 16 }) },
  { name: 'DeltaNet head dim 256', recipe: 'q8_0', refuse: /DeltaNet head dim 256 exceeds 128/, geometry: g({ ssmHeadDim: 256, ssmVHeads: 2, ssmKHeads: 2 }) },
  { name: '16 query heads per KV head', recipe: 'q8_0', refuse: /16 query heads of 64 per KV head exceed/, geometry: g({ nHead: 16, nHeadKv: 1, headDim: 64 }) },
  { name: 'conv width 9', recipe: 'q8_0', refuse: /conv width of 9 exceeds 8/, geometry: g({ ssmConv: 9 }) },
  { name: 'hidden 100 (rows not a multiple of 8)', recipe: 'bf16', refuse: /embedding length 100 is not a multiple of 8/,
    geometry: g({ nEmbd: 100, nFfShexp: 256 }) },
];
