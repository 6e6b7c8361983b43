// ggml type ids and block geometry (must match ts/gguf/ggml-types.ts).

export const T_F32: i32 = 0;
export const T_F16: i32 = 1;
export const T_Q4_0: i32 = 2;
export const T_Q4_1: i32 = 3;
export const T_Q5_0: i32 = 6;
export const T_Q5_1: i32 = 7;
export const T_Q8_0: i32 = 8;
export const T_Q2_K: i32 = 10;
export const T_Q3_K: i32 = 11;
export const T_Q4_K: i32 = 12;
export const T_Q5_K: i32 = 13;
export const T_Q6_K: i32 = 14;
export const T_IQ2_XXS: i32 = 16;
export const T_IQ2_XS: i32 = 17;
export const T_IQ3_XXS: i32 = 18;
export const T_IQ1_S: i32 = 19;
export const T_IQ4_NL: i32 = 20;
export const T_IQ3_S: i32 = 21;
export const T_IQ2_S: i32 = 22;
export const T_IQ4_XS: i32 = 23;
export const T_IQ1_M: i32 = 29;
export const T_BF16: i32 = 30;

/** Elements per block (0 = unsupported type). */
export function blockElems(t: i32): i32 {
  switch (t) {
    case T_F32: case T_F16: case T_BF16: return 1;
    case T_Q4_0: case T_Q4_1: case T_Q5_0: case T_Q5_1: case T_Q8_0: case T_IQ4_NL: return 32;
    case T_Q2_K: case T_Q3_K: case T_Q4_K: case T_Q5_K: case T_Q6_K:
    case T_IQ2_XXS: case T_IQ2_XS: case T_IQ3_XXS: case T_IQ4_XS:
    case T_IQ2_S: case T_IQ3_S: case T_IQ1_S: case T_IQ1_M: return 256;
    default: return 0;
  }
}

/** Bytes per block (0 = unsupported type). */
export function blockBytes(t: i32): i32 {
  switch (t) {
    case T_F32: return 4;
    case T_F16: case T_BF16: return 2;
    case T_Q4_0: case T_IQ4_NL: return 18;
    case T_Q4_1: return 20;
    case T_Q5_0: return 22;
    case T_Q5_1: return 24;
    case T_Q8_0: return 34;
    case T_Q2_K: return 84;
    case T_Q3_K: return 110;
    case T_Q4_K: return 144;
    case T_Q5_K: return 176;
    case T_Q6_K: return 210;
    case T_IQ2_XXS: return 66;
    case T_IQ2_XS: return 74;
    case T_IQ3_XXS: return 98;
    case T_IQ4_XS: return 136;
    case T_IQ2_S: return 82;
    case T_IQ3_S: return 110;
    case T_IQ1_S: return 50;
    case T_IQ1_M: return 56;
    default: return 0;
  }
}
