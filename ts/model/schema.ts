/**
 * The model schema: every tensor QuarkStar reads, once, per layer kind — its name, its shapes
 * (in the model's own dimensions), which types it may have, where the CPU engine keeps it (its
 * slot in the WASM tensor table: core-as/generated/slots.ts is generated from this by
 * scripts/build/gen-slots.ts) and which decode stack the Vulkan engine puts it in. shape.ts validates
 * files against it, make-model writes files from it, both engines load from it.
 * Pure data plus dimension arithmetic: nothing here reads a file.
 */
import type { ModelShape } from './model-shape.js';

/** Which types a tensor may have: 'float' = F32/F16/BF16 only (norms, conv, router), 'any' = every supported type. */
export type TypeClass = 'float' | 'any';

/** Dimensions a shape may name: a ModelShape field, a derived size, or a literal. */
export type Dim = 'nEmbd' | 'nVocab' | 'nExpert' | 'nFfExp' | 'nFfShexp' | 'ssmInner' | 'ssmVHeads' | 'ssmConv' | 'ssmHeadDim' | 'headDim'
  | 'convCh' | 'qGate' | 'kvDim' | 'attnOut' | 1;

/** Decode stacks (Vulkan): projections of one input run as one matvec over stacked rows. */
export type StackKey = 'ssm_in' | 'attn_in' | 'router_in';

export interface TensorSchema {
  /** the name (global tensors) or the suffix after `blk.N.` (layer tensors) */
  key: string;
  /** acceptable shapes, ggml order (ne0 first); usually one */
  shapes: Dim[][];
  types: TypeClass;
  /** the CPU tensor-table slot's name (S_<slot> in core-as) */
  slot: string;
  stack?: StackKey;
}

export const GLOBAL_TENSORS = [
  // the embedding is read row by row on the host by both engines (no slot)
  { key: 'token_embd.weight', shapes: [['nEmbd', 'nVocab']], types: 'any', slot: '' },
  { key: 'output_norm.weight', shapes: [['nEmbd']], types: 'float', slot: 'OUTPUT_NORM' },
  { key: 'output.weight', shapes: [['nEmbd', 'nVocab']], types: 'any', slot: 'OUTPUT' },
] as const satisfies readonly TensorSchema[];

/** Every layer: the two norms and the MoE block. */
export const COMMON_TENSORS = [
  { key: 'attn_norm.weight', shapes: [['nEmbd']], types: 'float', slot: 'ATTN_NORM' },
  { key: 'post_attention_norm.weight', shapes: [['nEmbd']], types: 'float', slot: 'POST_NORM' },
  { key: 'ffn_gate_inp.weight', shapes: [['nEmbd', 'nExpert']], types: 'float', slot: 'ROUTER', stack: 'router_in' },
  { key: 'ffn_gate_exps.weight', shapes: [['nEmbd', 'nFfExp', 'nExpert']], types: 'any', slot: 'GATE_EXPS' },
  { key: 'ffn_up_exps.weight', shapes: [['nEmbd', 'nFfExp', 'nExpert']], types: 'any', slot: 'UP_EXPS' },
  { key: 'ffn_down_exps.weight', shapes: [['nFfExp', 'nEmbd', 'nExpert']], types: 'any', slot: 'DOWN_EXPS' },
  { key: 'ffn_gate_inp_shexp.weight', shapes: [['nEmbd'], ['nEmbd', 1]], types: 'float', slot: 'SHEXP_GATE_INP', stack: 'router_in' },
  { key: 'ffn_gate_shexp.weight', shapes: [['nEmbd', 'nFfShexp']], types: 'any', slot: 'SHEXP_GATE' },
  { key: 'ffn_up_shexp.weight', shapes: [['nEmbd', 'nFfShexp']], types: 'any', slot: 'SHEXP_UP' },
  { key: 'ffn_down_shexp.weight', shapes: [['nFfShexp', 'nEmbd']], types: 'any', slot: 'SHEXP_DOWN' },
] as const satisfies readonly TensorSchema[];

/** Gated attention layers. */
export const ATTENTION_TENSORS = [
  { key: 'attn_q.weight', shapes: [['nEmbd', 'qGate']], types: 'any', slot: 'Q', stack: 'attn_in' },
  { key: 'attn_k.weight', shapes: [['nEmbd', 'kvDim']], types: 'any', slot: 'K', stack: 'attn_in' },
  { key: 'attn_v.weight', shapes: [['nEmbd', 'kvDim']], types: 'any', slot: 'V', stack: 'attn_in' },
  { key: 'attn_q_norm.weight', shapes: [['headDim']], types: 'float', slot: 'Q_NORM' },
  { key: 'attn_k_norm.weight', shapes: [['headDim']], types: 'float', slot: 'K_NORM' },
  { key: 'attn_output.weight', shapes: [['attnOut', 'nEmbd']], types: 'any', slot: 'O' },
] as const satisfies readonly TensorSchema[];

/** Gated DeltaNet layers. */
export const DELTANET_TENSORS = [
  { key: 'attn_qkv.weight', shapes: [['nEmbd', 'convCh']], types: 'any', slot: 'QKV', stack: 'ssm_in' },
  { key: 'attn_gate.weight', shapes: [['nEmbd', 'ssmInner']], types: 'any', slot: 'Z', stack: 'ssm_in' },
  { key: 'ssm_beta.weight', shapes: [['nEmbd', 'ssmVHeads']], types: 'any', slot: 'BETA', stack: 'ssm_in' },
  { key: 'ssm_alpha.weight', shapes: [['nEmbd', 'ssmVHeads']], types: 'any', slot: 'ALPHA', stack: 'ssm_in' },
  { key: 'ssm_dt.bias', shapes: [['ssmVHeads']], types: 'float', slot: 'DT' },
  { key: 'ssm_a', shapes: [['ssmVHeads']], types: 'float', slot: 'A' },
  { key: 'ssm_conv1d.weight', shapes: [['ssmConv', 'convCh']], types: 'float', slot: 'CONV' },
  { key: 'ssm_norm.weight', shapes: [['ssmHeadDim']], types: 'float', slot: 'SSM_NORM' },
  { key: 'ssm_out.weight', shapes: [['ssmInner', 'nEmbd']], types: 'any', slot: 'SSM_OUT' },
] as const satisfies readonly TensorSchema[];

export type LayerTensorKey = (typeof COMMON_TENSORS | typeof ATTENTION_TENSORS | typeof DELTANET_TENSORS)[number]['key'];
export type GlobalTensorKey = (typeof GLOBAL_TENSORS)[number]['key'];

/** The CPU tensor table's layer slots, in slot order (common, attention, DeltaNet: the WASM numbering). */
export const LAYER_SLOT_ORDER: readonly TensorSchema[] = [...COMMON_TENSORS, ...ATTENTION_TENSORS, ...DELTANET_TENSORS];
/** Global slots (the table's last row), in slot order. */
export const GLOBAL_SLOT_ORDER: readonly TensorSchema[] = GLOBAL_TENSORS.filter((t) => t.slot);

/** A layer's tensors in file order: the common ones, then its kind's. */
export function layerTensors(recurrent: boolean): readonly TensorSchema[] {
  return [...COMMON_TENSORS, ...(recurrent ? DELTANET_TENSORS : ATTENTION_TENSORS)];
}

/** The size a dimension name stands for in this model. */
export function dimOf(s: ModelShape, d: Dim): number {
  switch (d) {
    case 1: return 1;
    case 'convCh': return 2 * s.ssmKHeads * s.ssmHeadDim + s.ssmInner;
    case 'qGate': return 2 * s.nHead * s.headDim;
    case 'kvDim': return s.nHeadKv * s.headDim;
    case 'attnOut': return s.nHead * s.headDim;
    default: return s[d];
  }
}

/** The layer of a `blk.N.…` tensor name, or -1 for a global tensor. */
export const layerOf = (name: string): number => Number(/^blk\.(\d+)\./.exec(name)?.[1] ?? -1);

/** Whether a tensor is a layer's routed experts (gate, up or down: what SSD streaming leaves in the file). */
export const isRoutedExpert = (name: string): boolean => /^blk\.\d+\.ffn_(gate|up|down)_exps\.weight$/.test(name);

/** The stacks' members per key, in stack order (weights.ts builds them; all layers of a kind alike). */
export function stackMembers(key: StackKey): string[] {
  return LAYER_SLOT_ORDER.filter((t) => t.stack === key).map((t) => t.key);
}
