import { GLOBAL_SLOT_ORDER, LAYER_SLOT_ORDER } from '../../model/schema.js';

/** Twin of core-as/engine/layout.ts: offsets of the blocks JS writes for the forward pass. */
export const H = {
  N_LAYER: 0, N_EMBD: 4, N_VOCAB: 8, N_HEAD: 12, N_HEAD_KV: 16, HEAD_DIM: 20, N_ROT: 24, SSM_CONV: 28,
  SSM_HEAD_DIM: 32, SSM_K_HEADS: 36, SSM_V_HEADS: 40, N_EXPERT: 44, N_EXPERT_USED: 48, N_FF_EXP: 52,
  N_FF_SHEXP: 56, EPS: 60, ROPE_THETA: 64, MAX_TOKENS: 72, RECURRENT: 76, TENSORS: 80, EXPERTS: 84, BYTES: 96,
} as const;

export const T_ENTRY = 32;
/** Tensor-table slots from the model schema (the same order scripts/build/gen-slots.ts gives core-as). */
export const N_SLOTS = LAYER_SLOT_ORDER.length;
/** tensor name suffix (after "blk.N.") → slot */
export const LAYER_SLOTS: Record<string, number> = Object.fromEntries(LAYER_SLOT_ORDER.map((t, i) => [t.key, i]));
export const GLOBAL_SLOTS: Record<string, number> = Object.fromEntries(GLOBAL_SLOT_ORDER.map((t, i) => [t.key, i]));
export const E_ENTRY = 12;

export const SS = { CTX: 0, K_TYPE: 4, V_TYPE: 8, K_ROW: 12, V_ROW: 16, SCORES: 20, STEER: 24, STEER_ATTN: 28, STEER_FFN: 32, LAYERS: 64 } as const;
