// Shared memory layout between JS (ts/engine/cpu/layout.ts) and the forward pass. JS writes
// the hyperparameters, the tensor table and the session tables; the kernels only read them.
// The tensor slots are generated from the model schema; the hyperparameter and session offsets
// below have twins in ts/engine/cpu/layout.ts (test/cpu-layout.test.ts compares the two).

// Hyperparameters (written once by JS, read by configure()).
export const H_N_LAYER = 0;
export const H_N_EMBD = 4;
export const H_N_VOCAB = 8;
export const H_N_HEAD = 12;
export const H_N_HEAD_KV = 16;
export const H_HEAD_DIM = 20;
export const H_N_ROT = 24;
export const H_SSM_CONV = 28;
export const H_SSM_HEAD_DIM = 32;
export const H_SSM_K_HEADS = 36;
export const H_SSM_V_HEADS = 40;
export const H_N_EXPERT = 44;
export const H_N_EXPERT_USED = 48;
export const H_N_FF_EXP = 52;
export const H_N_FF_SHEXP = 56;
export const H_EPS = 60; // f32
export const H_ROPE_THETA = 64; // f64
export const H_MAX_TOKENS = 72; // largest chunk a forward call may get
export const H_RECURRENT = 76; // ptr to u8[nLayer]: 1 = DeltaNet layer
export const H_TENSORS = 80; // ptr to the tensor table
export const H_EXPERTS = 84; // ptr to the expert table
export const H_BYTES = 96;

// Tensor table: (nLayer + 1) × N_SLOTS entries of 32 bytes: ptr, type, rowBytes, ne0, rows.
// The last "layer" holds the global tensors. The slots come from the model schema
// (ts/model/schema.ts → core-as/generated/slots.ts).
export const T_ENTRY = 32;
export * from '../generated/slots';

// Expert table: nLayer × nExpert entries of 12 bytes: gate, up, down pointers (0 = not loaded).
export const E_ENTRY = 12;

// Session table (one per session), written by JS:
export const SS_CTX = 0; // capacity in tokens
export const SS_K_TYPE = 4;
export const SS_V_TYPE = 8;
export const SS_K_ROW = 12; // bytes of one token's K row (all KV heads)
export const SS_V_ROW = 16;
export const SS_SCORES = 20; // ptr to f32[nHead × ctx] attention scores scratch
export const SS_STEER = 24; // ptr to f32[nLayer × nEmbd] steering directions, or 0
export const SS_STEER_ATTN = 28; // f32 scale
export const SS_STEER_FFN = 32; // f32 scale
export const SS_LAYERS = 64; // per layer 8 bytes: K cache + V cache (attention) or conv + ssm state (DeltaNet)
