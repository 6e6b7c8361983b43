// Body of mm.comp (dense prefill matmul) and mm_moe.comp (routed experts, tokens grouped by
// expert): a tiled matmul Y[j·yStride + r] = W_r · X_j that decodes each weight tile once into
// shared memory and reuses it for BN activation rows (the matvec/matmul shaders decode every weight
// group once per 1 or 8 rows straight from memory: at prefill sizes they were compute-bound on
// decoding, ~90% of a prefill chunk).
// Tiles: BM = 16·TM output rows (the engine: 64) × BN activation rows per workgroup; the reduction
// dimension walks in steps of BK = 32 values (4 groups of 8, decode.glsl). Per step, NT threads:
// thread t decodes group t % 4 of rows t / 4 (+ NT/4 …) into WS (and, GLU, the matching up rows
// into US), and loads XL floats of the X tile into XS; after a barrier each thread accumulates a
// TM × TN block (the engine: 4 × 4; rows 4·(t % 16)…, activation rows 4·(t / 16)…): per 32-value
// step 32·(TM + TN) shared loads feed 32·TM·TN FMAs.
// Shared arrays are [k][row] so the 4 rows / 4 tokens of a run are adjacent: one vec4 load each
// (the compiler is not left to prove the alignment that would merge four scalar loads).
// The reduction order of one output (k ascending, one FMA chain per output) does not depend on
// which tile slot its activation row occupies: grouping tokens by expert changes no bits.
// Dense (mm.comp, BN = 64, 256 threads): dispatch (⌈rows / 64⌉, ⌈nRows / 64⌉); activation rows j0 + slot.
// Experts (mm_moe.comp, BN = 32, 128 threads, MOE): dispatch (⌈rows / 64⌉, maxTiles); workgroup y takes tile
//   y of TILES (moe_tiles.comp: expert e, first LIST entry, count; tiles past TILES[0].x exit):
//   slot s is pair LIST[start + s] = token·K + k; X row = pair / K (or pair with flags bit 1, the
//   down projection); Y row = pair; weight rows of expert e (only experts [e0, e0 + ne) are in
//   this binding: a window). Flags bit 2 = GLU as in matvec.glsl: Y = silu(gate·x)·(up·x), the
//   up row upBytes after its gate row. Needs n % 32 == 0 (the engine falls back to matmul).
#extension GL_GOOGLE_include_directive : enable
#include "common.glsl"

// NT threads: 16 row groups of TM rows × NT/16 token groups of TN; each thread decodes DJ of the
// tile's 4·BM weight groups per step and loads XL floats of its X tile. A thread's rows and
// tokens come in runs of 4 (one vec4 read each), the runs 64 rows / 4·NT/16 tokens apart, so
// each vec4 read of a subgroup covers adjacent words. TM = 4 is the engine's (both modules: TN =
// 4); other TM, TN are experiments (scripts/experiments/tiles-f32).
#ifndef TM
#define TM 4u
#endif
const uint BM = 16u * TM, BK = 32u, TN = BN * 16u / NT, XL = BN * BK / NT, DJ = 4u * BM / NT;
const uint MV4 = TM / 4u, NV4 = TN / 4u, TG = NT / 16u;
layout(local_size_x = NT) in;
#include "mm_bindings.glsl"

#include "decode.glsl"

shared vec4 WS[BK * BM / 4u];
shared vec4 US[BK * BM / 4u];
shared vec4 XS[BK * BN / 4u];
#define MM_TILE_DECL
#include "mm_tile.glsl"
#undef MM_TILE_DECL

void main() {
  uint tid = gl_LocalInvocationID.x;
  bool glu = (pc.flags & 4u) != 0u;
  uint r0 = gl_WorkGroupID.x * BM;
#ifdef OVERDISPATCH
  // (scripts/experiments/tiles-f32: modules whose tile is larger than the one the engine
  // dispatches for; the extra workgroups leave)
  if (r0 >= pc.rows) return;
#endif
#include "mm_tile.glsl"
  uint tr = tid & 15u, tc = tid >> 4;
  float acc[TM][TN], accU[TM][TN];
  [[unroll]] for (uint i = 0u; i < TM; i++) [[unroll]] for (uint j = 0u; j < TN; j++) { acc[i][j] = 0.0; accU[i][j] = 0.0; }
  for (uint k0 = 0u; k0 < pc.n; k0 += BK) {
    uint g = k0 / 8u + dg;
    [[unroll]] for (uint q = 0u; q < DJ; q++) {
      float w[8];
      uint r = dr + (NT / 4u) * q;
      decode(wo[q], g, w);
      [[unroll]] for (uint i = 0u; i < 8u; i++) WS[((dg * 8u + i) * BM + r) >> 2][r & 3u] = w[i];
      if (glu) {
        decode(wo[q] + pc.upBytes, g, w);
        [[unroll]] for (uint i = 0u; i < 8u; i++) US[((dg * 8u + i) * BM + r) >> 2][r & 3u] = w[i];
      }
    }
    [[unroll]] for (uint i = 0u; i < XL; i++) XS[((xk + i) * BN + xs) >> 2][xs & 3u] = X[xo + k0 + i];
    barrier();
    [[unroll]] for (uint kk = 0u; kk < BK; kk++) {
      vec4 a[MV4], b[NV4];
      [[unroll]] for (uint v = 0u; v < MV4; v++) a[v] = WS[kk * (BM / 4u) + 16u * v + tr];
      [[unroll]] for (uint u = 0u; u < NV4; u++) b[u] = XS[kk * (BN / 4u) + TG * u + tc];
      [[unroll]] for (uint i = 0u; i < TM; i++) [[unroll]] for (uint j = 0u; j < TN; j++) acc[i][j] = fma(a[i >> 2][i & 3u], b[j >> 2][j & 3u], acc[i][j]);
      if (glu) {
        [[unroll]] for (uint v = 0u; v < MV4; v++) a[v] = US[kk * (BM / 4u) + 16u * v + tr];
        [[unroll]] for (uint i = 0u; i < TM; i++) [[unroll]] for (uint j = 0u; j < TN; j++) accU[i][j] = fma(a[i >> 2][i & 3u], b[j >> 2][j & 3u], accU[i][j]);
      }
    }
    barrier();
  }
  [[unroll]] for (uint j = 0u; j < TN; j++) {
    uint s = 4u * (TG * (j >> 2) + tc) + (j & 3u);
    if (s >= count) continue;
    uint yo = pc.yOffset + yRow[s] * pc.yStride;
    [[unroll]] for (uint i = 0u; i < TM; i++) {
      uint r = r0 + 64u * (i >> 2) + 4u * tr + (i & 3u);
      if (r < pc.rows) Y[yo + r] = glu ? siluf(acc[i][j]) * accU[i][j] : acc[i][j];
    }
  }
}
