/**
 * The model's dimensions as read from a GGUF's metadata (shape.ts reads and validates them): its own
 * file, so the tensor schema (schema.ts), which sizes tensors from it, and the reader do not import
 * each other.
 */
export interface ModelShape {
  /** main decoder layers (block_count − nextn_predict_layers) */
  nLayer: number;
  /** MTP layers bundled after the main stack (not used for normal decoding) */
  nNextn: number;
  nEmbd: number;
  nVocab: number;
  contextLength: number;
  eps: number;
  /** per layer: true = Gated DeltaNet, false = gated full attention */
  recurrent: boolean[];
  // gated attention
  nHead: number;
  nHeadKv: number;
  headDim: number;
  nRot: number;
  ropeTheta: number;
  ropeSections: number[];
  // Gated DeltaNet
  ssmConv: number;
  /** key/value head dim (ssm.state_size) */
  ssmHeadDim: number;
  /** key heads (ssm.group_count) */
  ssmKHeads: number;
  /** value heads (ssm.time_step_rank) */
  ssmVHeads: number;
  /** value_dim = ssmVHeads × ssmHeadDim (ssm.inner_size) */
  ssmInner: number;
  // MoE
  nExpert: number;
  nExpertUsed: number;
  nFfExp: number;
  nFfShexp: number;
  /** true when every number equals the real Qwen3.6-35B-A3B geometry */
  isReal: boolean;
}
