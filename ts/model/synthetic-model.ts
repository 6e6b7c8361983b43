/**
 * Synthetic qwen35moe GGUFs: any geometry, any recipe, random but valid weights, deterministic from
 * a seed, streamed to disk in bounded memory. `full` has the real Qwen3.6-35B-A3B shapes (for
 * speed and memory measurements); `tiny` has tinyA's (for tests).
 */
import * as fs from 'node:fs';
import { GgmlType, ggufHeader, kv, rowBytes, typeInfo, writeGguf, type GgufValue, type TensorSpec } from '../gguf/index.js';
import { ARCH, requiredTensors, type ModelShape } from './shape.js';
import { layerOf } from './schema.js';
import { Rng, fillRandom, seedFor, type FloatInit } from './synth.js';
import { BYTE_TO_UNICODE } from '../tokenizer/byte-unicode.js';

export type Recipe = 'bf16' | 'q8_0' | 'q2' | 'q2q4' | 'mixed' | 'iq2m' | 'iq1m';
export const RECIPES: Recipe[] = ['bf16', 'q8_0', 'q2', 'q2q4', 'mixed', 'iq2m', 'iq1m'];

/**
 * Recipe `mixed`: every matrix takes the next type of this cycle that its row length allows (the
 * 256-element types need rows of multiples of 256), so one small model runs every decoder, gate and
 * up of different types (no fused GLU) and projections that cannot be stacked.
 */
const MIXED_CYCLE = [
  GgmlType.Q4_0, GgmlType.IQ2_S, GgmlType.Q4_1, GgmlType.IQ3_S, GgmlType.Q5_0, GgmlType.IQ1_S, GgmlType.Q5_1, GgmlType.IQ1_M,
  GgmlType.Q3_K, GgmlType.IQ4_NL, GgmlType.IQ2_XS, GgmlType.Q5_K, GgmlType.IQ3_XXS, GgmlType.Q6_K, GgmlType.IQ4_XS,
  GgmlType.Q8_0, GgmlType.Q2_K, GgmlType.IQ2_XXS, GgmlType.Q4_K, GgmlType.F16, GgmlType.BF16,
];

export type Geometry = Omit<ModelShape, 'recurrent' | 'isReal' | 'nNextn' | 'contextLength' | 'eps' | 'ropeTheta'> & {
  fullAttentionInterval: number;
  /** first id of the 33 Qwen added tokens (<|endoftext|> …) */
  addedTokensStart: number;
};

export const PRESETS: Record<'tiny' | 'full', Geometry> = {
  // tinyA's geometry (see shared oracle README)
  tiny: {
    nLayer: 4, nEmbd: 256, nVocab: 1088, nHead: 4, nHeadKv: 2, headDim: 64, nRot: 16, ropeSections: [3, 3, 2, 0],
    ssmConv: 4, ssmHeadDim: 64, ssmKHeads: 2, ssmVHeads: 4, ssmInner: 256, nExpert: 6, nExpertUsed: 2,
    nFfExp: 256, nFfShexp: 256, fullAttentionInterval: 4, addedTokensStart: 1000,
  },
  // Qwen3.6-35B-A3B (model-spec §1)
  full: {
    nLayer: 40, nEmbd: 2048, nVocab: 248320, nHead: 16, nHeadKv: 2, headDim: 256, nRot: 64, ropeSections: [11, 11, 10, 0],
    ssmConv: 4, ssmHeadDim: 128, ssmKHeads: 16, ssmVHeads: 32, ssmInner: 4096, nExpert: 256, nExpertUsed: 8,
    nFfExp: 512, nFfShexp: 512, fullAttentionInterval: 4, addedTokensStart: 248044,
  },
};

/** The 33 Qwen3.5/3.6 added tokens in id order, with GGUF token types (3 control, 4 user-defined). */
export const ADDED_TOKENS: [string, number][] = [
  ['<|endoftext|>', 3], ['<|im_start|>', 3], ['<|im_end|>', 3], ['<|object_ref_start|>', 3], ['<|object_ref_end|>', 3],
  ['<|box_start|>', 3], ['<|box_end|>', 3], ['<|quad_start|>', 3], ['<|quad_end|>', 3], ['<|vision_start|>', 3],
  ['<|vision_end|>', 3], ['<|vision_pad|>', 3], ['<|image_pad|>', 3], ['<|video_pad|>', 3], ['<tool_call>', 4],
  ['</tool_call>', 4], ['<|fim_prefix|>', 3], ['<|fim_middle|>', 3], ['<|fim_suffix|>', 3], ['<|fim_pad|>', 3],
  ['<|repo_name|>', 3], ['<|file_sep|>', 3], ['<tool_response>', 4], ['</tool_response>', 4], ['<think>', 4],
  ['</think>', 4], ['<|audio_start|>', 3], ['<|audio_end|>', 3], ['<tts_pad>', 3], ['<tts_text_bos>', 3],
  ['<tts_text_eod>', 3], ['<tts_text_bos_single>', 3], ['<|audio_pad|>', 3],
];

/** A byte-level placeholder tokenizer: 256 byte tokens, unused fillers, the added tokens, padding. */
function placeholderTokenizer(g: Geometry): [string, GgufValue][] {
  const tokens: string[] = new Array(g.nVocab);
  const types = new Int32Array(g.nVocab);
  const b2u = BYTE_TO_UNICODE;
  for (let i = 0; i < g.nVocab; i++) {
    if (i < 256) { tokens[i] = b2u[i]; types[i] = 1; }
    else if (i < g.addedTokensStart) { tokens[i] = `[UNUSED${i}]`; types[i] = 5; }
    else if (i < g.addedTokensStart + ADDED_TOKENS.length) { const [t, ty] = ADDED_TOKENS[i - g.addedTokensStart]; tokens[i] = t; types[i] = ty; }
    else { tokens[i] = `[PAD${i}]`; types[i] = 5; }
  }
  return [
    ['tokenizer.ggml.model', kv.str('gpt2')],
    ['tokenizer.ggml.pre', kv.str('qwen35')],
    ['tokenizer.ggml.tokens', kv.strs(tokens)],
    ['tokenizer.ggml.token_type', kv.i32s(types)],
    ['tokenizer.ggml.merges', kv.strs([])],
    ['tokenizer.ggml.eos_token_id', kv.u32(g.addedTokensStart + 2)],
    ['tokenizer.ggml.padding_token_id', kv.u32(g.addedTokensStart)],
    ['tokenizer.ggml.add_bos_token', kv.bool(false)],
  ];
}

const isExperts = (n: string) => /_exps\.weight$/.test(n);

const floatOnly = (name: string, shape: number[]) =>
  shape.length === 1 || /norm|ffn_gate_inp|ssm_conv1d|ssm_a$|ssm_dt/.test(name) || (shape.length === 2 && shape[1] === 1);

/**
 * The recipe: tensor name + shape (+ for `mixed`, how many quantizable matrices precede it) → ggml type. 1-D
 * tensors, norms, routers and conv stay F32. `iq2m` and `iq1m` follow the shape of llama.cpp's
 * IQ2_M / IQ1_M mixes as community Qwen3.6 quants use them (routed gate/up IQ2_S or IQ1_M, routed
 * down one step up, IQ4_XS / Q4_K elsewhere, Q6_K output); they are approximations for
 * measurements, not copies of llama.cpp's per-tensor rules.
 */
export function recipeType(recipe: Recipe, name: string, shape: number[], nLayer: number, index = 0): number {
  if (floatOnly(name, shape)) return GgmlType.F32;
  if (recipe === 'bf16') return GgmlType.BF16;
  if (recipe === 'q8_0') return GgmlType.Q8_0;
  if (recipe === 'mixed') {
    for (let k = 0; k < MIXED_CYCLE.length; k++) {
      const t = MIXED_CYCLE[(index + k) % MIXED_CYCLE.length];
      if (shape[0] % typeInfo(t)!.blockElems === 0) return t;
    }
    return GgmlType.F16;
  }
  const k256 = shape[0] % 256 === 0;
  if (recipe === 'iq2m' || recipe === 'iq1m') {
    if (!k256) return GgmlType.Q8_0;
    if (name === 'output.weight') return GgmlType.Q6_K;
    if (isExperts(name)) {
      if (/down/.test(name)) return recipe === 'iq2m' ? GgmlType.IQ3_S : GgmlType.IQ2_S;
      return recipe === 'iq2m' ? GgmlType.IQ2_S : GgmlType.IQ1_M;
    }
    return recipe === 'iq2m' ? GgmlType.Q4_K : GgmlType.IQ4_XS;
  }
  if (isExperts(name)) {
    const q4Layers = nLayer >= 24 ? 6 : 1;
    if (recipe === 'q2q4' && layerOf(name) >= nLayer - q4Layers) return GgmlType.Q4_K;
    return /down/.test(name) ? GgmlType.Q2_K : GgmlType.IQ2_XXS;
  }
  return GgmlType.Q8_0;
}

/** Value distribution per tensor: weights σ 0.02, norms ≈ 1, DeltaNet decay parameters in range. */
function initFor(name: string): FloatInit {
  if (/ssm_norm/.test(name)) return { mean: 1, sigma: 0.05 };
  if (/norm/.test(name)) return { mean: 1, sigma: 0.05 };
  if (/ssm_a$/.test(name)) return { mean: -1, sigma: 0.2 }; // = −exp(A_log) < 0
  if (/ssm_dt/.test(name)) return { mean: 0, sigma: 0.5 };
  if (/ssm_conv1d/.test(name)) return { mean: 0, sigma: 0.2 };
  if (/ffn_gate_inp/.test(name)) return { mean: 0, sigma: 0.05 };
  return { mean: 0, sigma: 0.02 };
}

export interface MakeModelOptions {
  out: string;
  geometry: Geometry;
  recipe: Recipe;
  seed?: number;
  chatTemplate?: string;
  /** a synthetic MTP head too, or alone (MtpPlan) */
  mtp?: MtpPlan;
  /** called after each tensor with bytes written so far */
  progress?: (done: number, total: number, name: string) => void;
  /**
   * Only the header: the tensor data left as a hole of the full size (zeros when read), written in
   * milliseconds. For tests that plan with a full-size file's tensor table, never for running.
   */
  headerOnly?: boolean;
}

export function shapeOf(g: Geometry): ModelShape {
  return {
    ...g, nNextn: 0, contextLength: 262144, eps: 1e-6, ropeTheta: 1e7, isReal: false,
    recurrent: Array.from({ length: g.nLayer }, (_, i) => (i + 1) % g.fullAttentionInterval !== 0),
  };
}

/**
 * A synthetic MTP head (llama.cpp's qwen35moe nextn layout): block nLayer, a gated full-attention
 * layer with its MoE, its input projection and norms, and its own output norm (the embedding and
 * the head are the trunk's). `with`: after the trunk in one file; `only`: the head alone with the
 * embedding, output norm and head it shares (an MTP-only file, as `q36 download mtp` fetches).
 */
export type MtpPlan = 'with' | 'only';

/** The tensors (name, shape, type) a model of this geometry and recipe holds, in file order. */
export function plannedTensors(g: Geometry, recipe: Recipe, mtp?: MtpPlan): TensorSpec[] {
  let matrices = 0;
  const L = g.nLayer;
  const trunk = requiredTensors(shapeOf(g)).map((r) => ({ name: r.name, shape: r.name.endsWith('ffn_gate_inp_shexp.weight') ? [g.nEmbd] : r.shapes[0] }));
  let list = trunk;
  if (mtp) {
    // the head's block: the shapes of a trunk attention layer's tensors, renamed to block L
    const attn = shapeOf(g).recurrent.indexOf(false);
    const block = trunk.filter((t) => t.name.startsWith(`blk.${attn}.`)).map((t) => ({ name: `blk.${L}.${t.name.slice(`blk.${attn}.`.length)}`, shape: t.shape }));
    const nextn = [
      { name: `blk.${L}.nextn.eh_proj.weight`, shape: [2 * g.nEmbd, g.nEmbd] },
      { name: `blk.${L}.nextn.enorm.weight`, shape: [g.nEmbd] },
      { name: `blk.${L}.nextn.hnorm.weight`, shape: [g.nEmbd] },
      { name: `blk.${L}.nextn.shared_head_norm.weight`, shape: [g.nEmbd] },
    ];
    const shared = trunk.filter((t) => !t.name.startsWith('blk.'));
    list = mtp === 'with' ? [...trunk, ...block, ...nextn] : [...shared, ...block, ...nextn];
  }
  return list.map((t) => ({ ...t, type: recipeType(recipe, t.name, t.shape, g.nLayer, floatOnly(t.name, t.shape) ? 0 : matrices++) }));
}

/** Writes the model; returns its size in bytes. Memory use is bounded by one chunk (≤ 16 MiB). */
export function makeModel(o: MakeModelOptions): { bytes: number; tensors: number } {
  const g = o.geometry;
  const seed = o.seed ?? 1;
  const tensors = plannedTensors(g, o.recipe, o.mtp);
  const k = (n: string) => `${ARCH}.${n}`;
  const metadata: [string, GgufValue][] = [
    ['general.architecture', kv.str(ARCH)],
    ['general.name', kv.str(`QuarkStar synthetic ${o.recipe} (seed ${seed})`)],
    ['general.quantization_version', kv.u32(2)],
    [k('block_count'), kv.u32(g.nLayer + (o.mtp ? 1 : 0))],
    ...(o.mtp ? [[k('nextn_predict_layers'), kv.u32(1)] as [string, GgufValue]] : []),
    [k('context_length'), kv.u32(262144)],
    [k('embedding_length'), kv.u32(g.nEmbd)],
    [k('attention.head_count'), kv.u32(g.nHead)],
    [k('attention.head_count_kv'), kv.u32(g.nHeadKv)],
    [k('attention.key_length'), kv.u32(g.headDim)],
    [k('attention.value_length'), kv.u32(g.headDim)],
    [k('attention.layer_norm_rms_epsilon'), kv.f32(1e-6)],
    [k('rope.freq_base'), kv.f32(1e7)],
    [k('rope.dimension_count'), kv.u32(g.nRot)],
    [k('rope.dimension_sections'), kv.i32s(g.ropeSections)],
    [k('expert_count'), kv.u32(g.nExpert)],
    [k('expert_used_count'), kv.u32(g.nExpertUsed)],
    [k('expert_feed_forward_length'), kv.u32(g.nFfExp)],
    [k('expert_shared_feed_forward_length'), kv.u32(g.nFfShexp)],
    [k('ssm.conv_kernel'), kv.u32(g.ssmConv)],
    [k('ssm.state_size'), kv.u32(g.ssmHeadDim)],
    [k('ssm.group_count'), kv.u32(g.ssmKHeads)],
    [k('ssm.time_step_rank'), kv.u32(g.ssmVHeads)],
    [k('ssm.inner_size'), kv.u32(g.ssmInner)],
    [k('full_attention_interval'), kv.u32(g.fullAttentionInterval)],
    ...placeholderTokenizer(g),
  ];
  if (o.chatTemplate) metadata.push(['tokenizer.chat_template', kv.str(o.chatTemplate)]);

  if (o.headerOnly) {
    const { header, sizes, alignment } = ggufHeader({ metadata, tensors });
    const end = header.byteLength + sizes.reduce((a, n) => a + Math.ceil(n / alignment) * alignment, 0);
    const fd = fs.openSync(o.out, 'w');
    try { fs.writeSync(fd, header, 0, header.byteLength, 0); fs.ftruncateSync(fd, end); } finally { fs.closeSync(fd); }
    return { bytes: end, tensors: tensors.length };
  }
  const CHUNK = 16 << 20;
  let total = 0;
  for (const t of tensors) total += rowBytes(t.type, t.shape[0]) * t.shape.slice(1).reduce((a, b) => a * b, 1);
  let done = 0;
  const buf = new Uint8Array(CHUNK);
  const res = writeGguf(o.out, {
    metadata, tensors,
    *fill(t) {
      const rng = new Rng(seedFor(seed, t.name));
      const rb = rowBytes(t.type, t.shape[0]);
      const rows = t.shape.slice(1).reduce((a, b) => a * b, 1);
      const rowsPerChunk = Math.max(1, Math.floor(CHUNK / rb));
      const init = initFor(t.name);
      for (let r = 0; r < rows; r += rowsPerChunk) {
        const n = Math.min(rowsPerChunk, rows - r);
        const view = n * rb <= CHUNK ? buf.subarray(0, n * rb) : new Uint8Array(n * rb);
        fillRandom(t.type, view, n * t.shape[0], rng, init);
        yield view;
      }
      done += rb * rows;
      o.progress?.(done, total, t.name);
    },
  });
  return { bytes: res.bytes, tensors: tensors.length };
}

/** Reads the chat template shipped in fixtures, if present (placeholder models still render chats). */
export function defaultChatTemplate(path: string): string | undefined {
  try { return fs.readFileSync(path, 'utf8'); } catch { return undefined; }
}
