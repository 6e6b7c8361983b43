// Body of mmh.comp and mmh_moe.comp: mm.glsl's tiled matmul (its tiles, dispatch, thread jobs and
// interface: that file's header) with packed f16 products, for devices whose f16 arithmetic is
// twice their f32 (RDNA's v_pk_fma_f16: the BC-250) and that have no matrix units. Weights and
// activations are staged in shared memory as f16 pairs along k (one uint a row and k pair, four
// rows a uvec4); each thread's 4 × 4 block multiplies them with f16vec2 FMAs (two products an
// instruction) into f16 partial sums, added to f32 sums after every 32-value step. Opt-in
// (Q36_VK_F16=1): the operands' f16 rounding and the f16 partial sums cost ~10⁻³ of the largest
// output where the f32 tiles are exact f32 (the measurements: docs/vulkan.md). The partial sums
// go to f32 every step (SPAN 1) rather than every few: longer spans (scripts/experiments/tiles-f16)
// measured slower as well as less exact.
#extension GL_GOOGLE_include_directive : enable
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#include "common.glsl"
#ifndef SPAN
#define SPAN 1u
#endif
const uint TM = 4u, BM = 64u, BK = 32u, TN = BN * 16u / NT, XL = BN * BK / NT, DJ = 4u * BM / NT;
const uint TG = NT / 16u;
layout(local_size_x = NT) in;
#include "mm_bindings.glsl"
#include "decode.glsl"

// [k pair][row / 4]: four rows' (k, k+1) halves
shared uvec4 WS[BK / 2u * BM / 4u];
shared uvec4 US[BK / 2u * BM / 4u];
shared uvec4 XS[BK / 2u * BN / 4u];
#define MM_TILE_DECL
#include "mm_tile.glsl"
#undef MM_TILE_DECL

f16vec2 h2(uint u) { return unpackFloat2x16(u); }

void main() {
  uint tid = gl_LocalInvocationID.x;
  bool glu = (pc.flags & 4u) != 0u;
  uint r0 = gl_WorkGroupID.x * BM;
#include "mm_tile.glsl"
  uint tr = tid & 15u, tc = tid >> 4;
  float acc[TM][TN], accU[TM][TN];
  f16vec2 h[TM][TN], hU[TM][TN];
  [[unroll]] for (uint i = 0u; i < TM; i++) [[unroll]] for (uint j = 0u; j < TN; j++) { acc[i][j] = 0.0; accU[i][j] = 0.0; h[i][j] = f16vec2(0.0); hU[i][j] = f16vec2(0.0); }
  uint step = 0u;
  for (uint k0 = 0u; k0 < pc.n; k0 += BK) {
    uint g = k0 / 8u + dg;
    [[unroll]] for (uint q = 0u; q < DJ; q++) {
      float w[8];
      uint r = dr + (NT / 4u) * q;
      decode(wo[q], g, w);
      [[unroll]] for (uint i = 0u; i < 4u; i++) WS[((dg * 4u + i) * BM + r) >> 2][r & 3u] = packFloat2x16(f16vec2(w[2u * i], w[2u * i + 1u]));
      if (glu) {
        decode(wo[q] + pc.upBytes, g, w);
        [[unroll]] for (uint i = 0u; i < 4u; i++) US[((dg * 4u + i) * BM + r) >> 2][r & 3u] = packFloat2x16(f16vec2(w[2u * i], w[2u * i + 1u]));
      }
    }
    [[unroll]] for (uint i = 0u; i < XL; i += 2u) XS[(((xk + i) / 2u) * BN + xs) >> 2][xs & 3u] = packFloat2x16(f16vec2(X[xo + k0 + i], X[xo + k0 + i + 1u]));
    barrier();
    [[unroll]] for (uint kp = 0u; kp < BK / 2u; kp++) {
      uvec4 a = WS[kp * (BM / 4u) + tr], b = XS[kp * (BN / 4u) + tc];
      [[unroll]] for (uint i = 0u; i < TM; i++) [[unroll]] for (uint j = 0u; j < TN; j++) h[i][j] = fma(h2(a[i]), h2(b[j]), h[i][j]);
      if (glu) {
        a = US[kp * (BM / 4u) + tr];
        [[unroll]] for (uint i = 0u; i < TM; i++) [[unroll]] for (uint j = 0u; j < TN; j++) hU[i][j] = fma(h2(a[i]), h2(b[j]), hU[i][j]);
      }
    }
    barrier();
    if (++step % SPAN == 0u || k0 + BK >= pc.n) {
      [[unroll]] for (uint i = 0u; i < TM; i++) [[unroll]] for (uint j = 0u; j < TN; j++) {
        acc[i][j] += float(h[i][j].x) + float(h[i][j].y);
        accU[i][j] += float(hU[i][j].x) + float(hU[i][j].y);
        h[i][j] = f16vec2(0.0);
        hU[i][j] = f16vec2(0.0);
      }
    }
  }
  [[unroll]] for (uint j = 0u; j < TN; j++) {
    uint s = 4u * tc + j;
    if (s >= count) continue;
    uint yo = pc.yOffset + yRow[s] * pc.yStride;
    [[unroll]] for (uint i = 0u; i < TM; i++) {
      uint r = r0 + 4u * tr + i;
      if (r < pc.rows) Y[yo + r] = glu ? siluf(acc[i][j]) * accU[i][j] : acc[i][j];
    }
  }
}
