#version 450
// mvq: a one-activation-row matvec (#17, #20) over 32-weight units against the activation row as
// three int8 levels per 32 values (rmsnorm's quant: x ≈ s0·a0 + s1·a1 + s2·a2, s1 = s0/254, s2 =
// s1/254, so the representation error is about amax·2^-24 of the 32 values, f32's own rounding),
// with packed 4×8-bit integer dot products (VK_KHR_shader_integer_dot_product): a unit's level
// sums are exact integers, scaled once per level. The f32 matvec decodes, converts and multiplies
// every weight (~9 instructions a weight, the H200's limit near 2·10¹² weights/s); here 8 weights
// cost one dot product a level.
// X: the levels as uvec4, [row][level][half][unit] (a warp's loads one contiguous run);
// XS: per row and unit (s0, s1, s2, 0). Thread t takes units t, t+64, … of ROWS rows; the
// reduction as matvec.glsl. Flags as matvec.glsl (bit 0 expert gather, bit 1 X row = j, bit 2 GLU).
// A row's sum depends only on its levels and n: decode and batched steps give a row the same bits.
#extension GL_EXT_spirv_intrinsics : require
#extension GL_KHR_shader_subgroup_arithmetic : enable
#include "common.glsl"
spirv_instruction(extensions = ["SPV_KHR_integer_dot_product"], capabilities = [6019, 6018], id = 4450)
int sdot(uint a, uint b, spirv_literal int fmt);
#define ROWS 4u
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer WB { uint W[]; };
layout(std430, binding = 1) readonly buffer XB { uvec4 XQ[]; };
layout(std430, binding = 2) buffer YB { float Y[]; };
layout(std430, binding = 3) readonly buffer IB { uint IDS[]; };
layout(std430, binding = 4) readonly buffer GB { uvec2 GRID[]; };
layout(std430, binding = 5) readonly buffer SB { vec4 XS[]; };
#include "matvec_push.glsl"
#include "decode.glsl"
shared float red[ROWS][64];

// 4 magnitude bytes with the signs of 4 mask bits applied (two's complement per byte; no carries:
// a negated byte is ~m + 1 with m >= 1)
uint signed4(uint mag, uint m4) {
  uint b = (m4 * 0x00204081u) & 0x01010101u;
  return (mag ^ (b * 0xFFu)) + b;
}
uint xw(uvec4 x[6], uint k, uint w) { uvec4 v = x[2u * k + (w >> 2)]; uint c = w & 3u; return c == 0u ? v.x : c == 1u ? v.y : c == 2u ? v.z : v.w; }

// unit u of the row at byte o against the activation unit (levels x, scales s)
float unitDot(uint o, uint u, uvec4 x[6], vec4 s) {
  int S0 = 0, S1 = 0, S2 = 0;
  float db;
#if defined(TYPE_IQ2_XXS)
  uint bo = o + 66u * (u >> 3), p = bo + 2u + 8u * (u & 7u);
  uvec2 v = wu64e(p);
  db = WHALF(W, bo) * (0.5 + float(v.y >> 28)) * 0.25;
  [[unroll]] for (uint l = 0u; l < 4u; l++) {
    uvec2 gr = GRID[IQ2XXS_GRID_AT + ((v.x >> (8u * l)) & 0xFFu)];
    uint sg = ksigns((v.y >> (7u * l)) & 127u);
    uint w0 = signed4(gr.x, sg & 15u), w1 = signed4(gr.y, sg >> 4);
    S0 += sdot(w0, xw(x, 0u, 2u * l), 0) + sdot(w1, xw(x, 0u, 2u * l + 1u), 0);
    S1 += sdot(w0, xw(x, 1u, 2u * l), 0) + sdot(w1, xw(x, 1u, 2u * l + 1u), 0);
    S2 += sdot(w0, xw(x, 2u, 2u * l), 0) + sdot(w1, xw(x, 2u, 2u * l + 1u), 0);
  }
#elif defined(TYPE_Q8_0)
  uint bo = o + 34u * u, i = (bo + 2u) >> 2;
  db = WHALF(W, bo);
  // the 32 quant bytes start 2 bytes into a word when the block does
  bool odd = ((bo + 2u) & 2u) != 0u;
  uint prev = W[i];
  [[unroll]] for (uint w = 0u; w < 8u; w++) {
    uint nx = wword(i + w + 1u);
    uint q = odd ? (prev >> 16) | (nx << 16) : prev;
    prev = nx;
    S0 += sdot(q, xw(x, 0u, w), 0);
    S1 += sdot(q, xw(x, 1u, w), 0);
    S2 += sdot(q, xw(x, 2u, w), 0);
  }
#else
#error "mvq.comp: IQ2_XXS and Q8_0 only"
#endif
  return db * ((s.x * float(S0) + s.y * float(S1)) + s.z * float(S2));
}

void main() {
  bool glu = (pc.flags & 4u) != 0u;
  uint outPerWg = glu ? ROWS / 2u : ROWS;
  uint r0 = gl_WorkGroupID.x * outPerWg, j = min(gl_WorkGroupID.y, pc.nRows - 1u), tid = gl_LocalInvocationID.x;
  uint nu = pc.n / 32u;
  uint wo[ROWS];
  [[unroll]] for (uint r = 0u; r < ROWS; r++) {
    uint wr = min(r0 + (glu ? r % (ROWS / 2u) : r), pc.rows - 1u);
    wo[r] = pc.wOffset + wr * pc.rowBytes + (glu && r >= ROWS / 2u ? pc.upBytes : 0u);
  }
  uint xrow = j;
  if ((pc.flags & 1u) != 0u) {
    uint ei = IDS[j] - pc.e0;
    if (ei >= pc.ne) return;
    [[unroll]] for (uint r = 0u; r < ROWS; r++) wo[r] += ei * pc.expertBytes;
    if ((pc.flags & 2u) == 0u) xrow = j / pc.K;
  }
  float acc[ROWS];
  [[unroll]] for (uint r = 0u; r < ROWS; r++) acc[r] = 0.0;
  for (uint u = tid; u < nu; u += 64u) {
    uvec4 x[6];
    [[unroll]] for (uint q = 0u; q < 6u; q++) x[q] = XQ[(xrow * 6u + q) * nu + u];
    vec4 s = XS[xrow * nu + u];
    [[unroll]] for (uint r = 0u; r < ROWS; r++) acc[r] += unitDot(wo[r], u, x, s);
  }
  [[unroll]] for (uint r = 0u; r < ROWS; r++) {
    float v = subgroupAdd(acc[r]);
    if (subgroupElect()) red[r][gl_SubgroupID] = v;
  }
  barrier();
  if (tid < outPerWg) {
    uint r = r0 + tid;
    float y = 0.0, yu = 0.0;
    for (uint sg = 0u; sg < gl_NumSubgroups; sg++) { y += red[tid][sg]; if (glu) yu += red[tid + ROWS / 2u][sg]; }
    if (glu) y = siluf(y) * yu;
    if (r < pc.rows) Y[pc.yOffset + j * pc.yStride + r] = y;
  }
}
