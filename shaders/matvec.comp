#version 450
// matvec: Y[j·yStride + r] = W_r · X_row(j) for one weight type (variant per type, see variants.json).
// Block layouts: quant-spec §3 (decoded per element from uint words, see common.glsl).
// Thread mapping: one workgroup of 64 threads per (output row r, activation row j); threads
//   stride over the row's blocks, then a shared-memory tree reduction (subgroup-size agnostic).
// Dispatch: (rows, nRows, 1). Modes (flags): bit 0 = expert gather: W offset = IDS[j]·expertBytes
//   (routed experts, j = token·K + k); bit 1 = X row is j (down projection) instead of j / K.
#extension GL_GOOGLE_include_directive : enable
#include "common.glsl"
#if defined(TYPE_IQ2_XXS)
#include "generated/tables.glsl"
#endif

layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer WB { uint W[]; };
layout(std430, binding = 1) readonly buffer XB { float X[]; };
layout(std430, binding = 2) buffer YB { float Y[]; };
layout(std430, binding = 3) readonly buffer IB { uint IDS[]; };
layout(push_constant) uniform PC {
  uint rows; uint n; uint rowBytes; uint xStride;
  uint yStride; uint flags; uint K; uint expertBytes;
  uint wOffset; uint xOffset; uint yOffset; uint pad;
} pc;

shared float red[64];

// Work items are sub-blocks of 32 values (SUB per block), so rows of few 256-value blocks still
// spread over the whole workgroup.
#if defined(TYPE_F32)
const uint BE = 32u, BB = 128u, SUB = 1u;
float block_dot(uint o, uint xo) {
  float s = 0.0;
  for (uint i = 0u; i < 32u; i++) s += uintBitsToFloat(W[(o >> 2) + i]) * X[xo + i];
  return s;
}
#elif defined(TYPE_F16)
const uint BE = 32u, BB = 64u, SUB = 1u;
float block_dot(uint o, uint xo) {
  float s = 0.0;
  for (uint i = 0u; i < 16u; i++) { vec2 v = unpackHalf2x16(W[(o >> 2) + i]); s += v.x * X[xo + 2u * i] + v.y * X[xo + 2u * i + 1u]; }
  return s;
}
#elif defined(TYPE_BF16)
const uint BE = 32u, BB = 64u, SUB = 1u;
float block_dot(uint o, uint xo) {
  float s = 0.0;
  for (uint i = 0u; i < 16u; i++) {
    uint w = W[(o >> 2) + i];
    s += uintBitsToFloat(w << 16) * X[xo + 2u * i] + uintBitsToFloat(w & 0xFFFF0000u) * X[xo + 2u * i + 1u];
  }
  return s;
}
#elif defined(TYPE_Q8_0)
const uint BE = 32u, BB = 34u, SUB = 1u;
float block_dot(uint o, uint xo) {
  float s = 0.0;
  for (uint i = 0u; i < 32u; i++) s += float(WSBYTE(W, o + 2u + i)) * X[xo + i];
  return WHALF(W, o) * s;
}
#elif defined(TYPE_Q2_K)
const uint BE = 256u, BB = 84u, SUB = 8u;
// sub-block s: elements 32s…32s+31 = half s/4, shift 2·(s%4), bytes 16+32·(s/4)+l, scale groups 2s, 2s+1
float sub_dot(uint o, uint xo, uint sb) {
  float d = WHALF(W, o + 80u), dmin = WHALF(W, o + 82u);
  uint qb = o + 16u + 32u * (sb >> 2), sh = 2u * (sb & 3u);
  float s = 0.0;
  for (uint g = 0u; g < 2u; g++) {
    uint sc = WBYTE(W, o + 2u * sb + g);
    float sq = 0.0, sx = 0.0;
    for (uint l = 16u * g; l < 16u * g + 16u; l++) {
      float x = X[xo + 32u * sb + l];
      sq += float((WBYTE(W, qb + l) >> sh) & 3u) * x;
      sx += x;
    }
    s += d * float(sc & 15u) * sq - dmin * float(sc >> 4) * sx;
  }
  return s;
}
#elif defined(TYPE_Q4_K) || defined(TYPE_Q5_K)
#if defined(TYPE_Q4_K)
const uint BE = 256u, BB = 144u, SUB = 8u;
#else
const uint BE = 256u, BB = 176u, SUB = 8u;
#endif
uvec2 scale_min(uint q, uint j) {
  if (j < 4u) return uvec2(WBYTE(W, q + j) & 63u, WBYTE(W, q + j + 4u) & 63u);
  return uvec2((WBYTE(W, q + j + 4u) & 15u) | ((WBYTE(W, q + j - 4u) >> 6) << 4), (WBYTE(W, q + j + 4u) >> 4) | ((WBYTE(W, q + j) >> 6) << 4));
}
float sub_dot(uint o, uint xo, uint sb) {
  float d = WHALF(W, o), dmin = WHALF(W, o + 2u);
  float s = 0.0;
  {
    uvec2 sm = scale_min(o + 4u, sb);
#if defined(TYPE_Q4_K)
    uint qs = o + 16u + 32u * (sb >> 1);
#else
    uint qs = o + 48u + 32u * (sb >> 1);
#endif
    float sq = 0.0, sx = 0.0;
    for (uint l = 0u; l < 32u; l++) {
      uint q = (WBYTE(W, qs + l) >> (4u * (sb & 1u))) & 15u;
#if defined(TYPE_Q5_K)
      q |= ((WBYTE(W, o + 16u + l) >> sb) & 1u) << 4;
#endif
      float x = X[xo + 32u * sb + l];
      sq += float(q) * x;
      sx += x;
    }
    s += d * float(sm.x) * sq - dmin * float(sm.y) * sx;
  }
  return s;
}
#elif defined(TYPE_Q6_K)
const uint BE = 256u, BB = 210u, SUB = 8u;
float sub_dot(uint o, uint xo, uint sb) {
  float d = WHALF(W, o + 208u);
  float s = 0.0;
  for (uint j = 2u * sb; j < 2u * sb + 2u; j++) {
    float sq = 0.0;
    for (uint l16 = 0u; l16 < 16u; l16++) {
      uint e = 16u * j + l16;
      uint h = e >> 7, k = (e & 127u) >> 5, l = e & 31u;
      uint lo = (WBYTE(W, o + 64u * h + 32u * (k & 1u) + l) >> (4u * (k >> 1))) & 15u;
      uint hi = (WBYTE(W, o + 128u + 32u * h + l) >> (2u * k)) & 3u;
      sq += float(int(lo | (hi << 4)) - 32) * X[xo + e];
    }
    s += d * float(WSBYTE(W, o + 192u + j)) * sq;
  }
  return s;
}
#elif defined(TYPE_IQ2_XXS)
const uint BE = 256u, BB = 66u, SUB = 8u;
float sub_dot(uint o, uint xo, uint ib) {
  float d = WHALF(W, o);
  float s = 0.0;
  {
    uint p = o + 2u + 8u * ib;
    uint aux = WU32(W, p + 4u);
    float db = d * (0.5 + float(aux >> 28)) * 0.25;
    float sb = 0.0;
    for (uint l = 0u; l < 4u; l++) {
      uint s7 = (aux >> (7u * l)) & 127u;
      uint signs = s7 | ((bitCount(s7) & 1u) << 7);
      uvec2 g = IQ2XXS_GRID[WBYTE(W, p + l)];
      for (uint k = 0u; k < 8u; k++) {
        float mag = float(((k < 4u ? g.x : g.y) >> (8u * (k & 3u))) & 0xFFu);
        float v = ((signs >> k) & 1u) != 0u ? -mag : mag;
        sb += v * X[xo + 32u * ib + 8u * l + k];
      }
    }
    s += db * sb;
  }
  return s;
}
#else
#error "matvec: no TYPE_ define"
#endif

#if defined(TYPE_F32) || defined(TYPE_F16) || defined(TYPE_BF16) || defined(TYPE_Q8_0)
#define SUB_IS_ONE 1
#else
#define SUB_IS_ONE 0
#endif

void main() {
  uint r = gl_WorkGroupID.x, j = gl_WorkGroupID.y, tid = gl_LocalInvocationID.x;
  uint wo = pc.wOffset + r * pc.rowBytes;
  uint xrow = j;
  if ((pc.flags & 1u) != 0u) {
    wo += IDS[j] * pc.expertBytes;
    if ((pc.flags & 2u) == 0u) xrow = j / pc.K;
  }
  uint xo = pc.xOffset + xrow * pc.xStride;
  uint items = (pc.n / BE) * SUB;
  float acc = 0.0;
  for (uint it = tid; it < items; it += 64u) {
    uint b = it / SUB;
#if SUB_IS_ONE
    acc += block_dot(wo + b * BB, xo + b * BE);
#else
    acc += sub_dot(wo + b * BB, xo + b * BE, it % SUB);
#endif
  }
  red[tid] = acc;
  barrier();
  for (uint s = 32u; s > 0u; s >>= 1) {
    if (tid < s) red[tid] += red[tid + s];
    barrier();
  }
  if (tid == 0u) Y[pc.yOffset + j * pc.yStride + r] = red[0];
}
