/** Twin of core-as/engine/layout.ts: offsets of the blocks JS writes for the forward pass. */
export const H = {
  N_LAYER: 0, N_EMBD: 4, N_VOCAB: 8, N_HEAD: 12, N_HEAD_KV: 16, HEAD_DIM: 20, N_ROT: 24, SSM_CONV: 28,
  SSM_HEAD_DIM: 32, SSM_K_HEADS: 36, SSM_V_HEADS: 40, N_EXPERT: 44, N_EXPERT_USED: 48, N_FF_EXP: 52,
  N_FF_SHEXP: 56, EPS: 60, ROPE_THETA: 64, MAX_TOKENS: 72, RECURRENT: 76, TENSORS: 80, EXPERTS: 84, BYTES: 96,
} as const;

export const T_ENTRY = 32;
export const N_SLOTS = 25;
/** tensor name suffix (after "blk.N.") → slot */
export const LAYER_SLOTS: Record<string, number> = {
  'attn_norm.weight': 0, 'post_attention_norm.weight': 1, 'ffn_gate_inp.weight': 2, 'ffn_gate_exps.weight': 3,
  'ffn_up_exps.weight': 4, 'ffn_down_exps.weight': 5, 'ffn_gate_inp_shexp.weight': 6, 'ffn_gate_shexp.weight': 7,
  'ffn_up_shexp.weight': 8, 'ffn_down_shexp.weight': 9, 'attn_q.weight': 10, 'attn_k.weight': 11, 'attn_v.weight': 12,
  'attn_q_norm.weight': 13, 'attn_k_norm.weight': 14, 'attn_output.weight': 15, 'attn_qkv.weight': 16,
  'attn_gate.weight': 17, 'ssm_beta.weight': 18, 'ssm_alpha.weight': 19, 'ssm_dt.bias': 20, 'ssm_a': 21,
  'ssm_conv1d.weight': 22, 'ssm_norm.weight': 23, 'ssm_out.weight': 24,
};
export const GLOBAL_SLOTS: Record<string, number> = { 'output_norm.weight': 0, 'output.weight': 1 };
export const E_ENTRY = 12;

export const SS = { CTX: 0, K_TYPE: 4, V_TYPE: 8, K_ROW: 12, V_ROW: 16, SCORES: 20, STEER: 24, STEER_ATTN: 28, STEER_FFN: 32, LAYERS: 64 } as const;
