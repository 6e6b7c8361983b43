// Body of mmc.comp and mmc_moe.comp: mm.glsl's tiled matmul on the device's matrix units
// (GL_KHR_cooperative_matrix, 16 × 16 × 16 f16 products with f32 accumulation). Same push block
// and bindings as mm.comp / mm_moe.comp, so the engine swaps one for the other where the device
// has the matrix units (graph.ts matvecOp); mm stays the fallback and the reference the parity runs
// compare against.
// Per BK = 32-value step the threads decode the weight tile into shared memory (WS) and stage the
// activation tile (XS). With SPLIT (both kernels define it) each value is held as two f16, hi (its
// first 11 significant bits) in WS/XS and lo (the rest, times LO) in WSL/XSL, and a product is
// hi·hi + (hi·lo + lo·hi) / LO: ~22 significant bits an operand, f32 sums, results within f32's
// tolerances of mm's (one f16 an operand, without SPLIT, moved the tiny random models' logits by
// up to ~1: docs/vulkan.md). The next step's values are decoded into registers while the current
// step multiplies. Subgroup s (32 lanes) owns the 16-row block s % 4 of the 64-row tile and CB
// 16-token blocks of the tile's tokens; its accumulators go through shared memory (CS) to the
// stores.
// GLU (the _glu modules, graph.ts picks them by the flag): the up rows (pc.upBytes on) decode into
// US and multiply into accumulators of their own; the stores apply silu(gate)·up as mm.glsl does.
// The GLU is a module of its own, not a branch on the flag: the plain kernels then need few enough
// registers for two workgroups a multiprocessor (with the branch every kernel held one:
// docs/vulkan.md).
// Needs a 32-lane subgroup, 16 × 16 × 16 f16 → f32 subgroup-scope products (the engine checks the
// device's list) and n % 32 == 0; shared memory under 48 KiB (NVIDIA's Vulkan limit).
#extension GL_GOOGLE_include_directive : enable
#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#include "common.glsl"

const uint BM = 64u, BK = 32u, XL = BN * BK / NT, DJ = 256u / NT;
// 16 × 16 output blocks per subgroup (32 lanes: NT / 32 subgroups share the BM × BN tile)
const uint CB = (BM / 16u) * (BN / 16u) / (NT / 32u);
// shared rows as f16vec4: BK values + 8 of padding (80 bytes: every row 16-byte aligned, and
// neighbouring rows start on other banks)
const uint SK = (BK + 8u) / 4u;
// the accumulators' staging, token-major: BM f32 + 4 of padding per token
const uint SC = BM + 4u;
layout(local_size_x = NT) in;
layout(std430, binding = 0) readonly buffer WB { uint W[]; };
layout(std430, binding = 1) readonly buffer XB { float X[]; };
layout(std430, binding = 2) writeonly buffer YB { float Y[]; };
layout(std430, binding = 3) readonly buffer LB { uint LIST[]; };
layout(std430, binding = 4) readonly buffer GB { uvec2 GRID[]; };
#ifdef MOE
layout(std430, binding = 5) readonly buffer TB { uvec4 TILES[]; };
#endif
#include "matvec_push.glsl"

#include "decode.glsl"

shared f16vec4 WS[BM * SK];
shared f16vec4 XS[BN * SK];
#ifdef GLU
shared f16vec4 US[BM * SK];
#endif
#ifdef SPLIT
// the parts f16 leaves out, times LO (2^11: kept clear of f16's subnormals)
const float LO = 2048.0;
shared f16vec4 WSL[BM * SK];
shared f16vec4 XSL[BN * SK];
#ifdef GLU
shared f16vec4 USL[BM * SK];
#endif
#endif
shared float CS[BN * SC];
#define MM_TILE_DECL
#include "mm_tile.glsl"
#undef MM_TILE_DECL

// the weight groups this thread decodes at step k0 (group dg of its DJ rows; the up rows too for a
// GLU) and its XL activations
void fetch(uint k0, uint wo[DJ], uint dg, uint xo, out float wr[DJ][8], out float ur[DJ][8], out float xr[XL]) {
  uint g = k0 / 8u + dg;
  [[unroll]] for (uint q = 0u; q < DJ; q++) {
    float w[8];
    decode(wo[q], g, w);
    wr[q] = w;
#ifdef GLU
    decode(wo[q] + pc.upBytes, g, w);
#endif
    ur[q] = w;
  }
  [[unroll]] for (uint i = 0u; i < XL; i++) xr[i] = X[xo + k0 + i];
}

// v as f16 in hi (and, SPLIT, the rest times LO in lo[i]) at element i of a shared array
#ifdef SPLIT
// hi keeps f16's 11 significant bits by clearing the other 13 of the f32 (exact in f16 across its
// normal range; a conversion round trip v - f32(f16(v)) was folded to 0 by a driver), lo the rest
#define PUT(A, i, v) { vec4 v_ = (v); vec4 h_ = uintBitsToFloat(floatBitsToUint(v_) & 0xFFFFE000u); A[i] = f16vec4(h_); A##L[i] = f16vec4((v_ - h_) * LO); }
#else
#define PUT(A, i, v) A[i] = f16vec4(v)
#endif

void main() {
  uint tid = gl_LocalInvocationID.x;
  uint r0 = gl_WorkGroupID.x * BM;
#include "mm_tile.glsl"
  // this subgroup's blocks: rows 16·rb …, tokens 16·(cb + j) … for j < CB
  uint sg = gl_SubgroupID, rb = sg % (BM / 16u), cb = (sg / (BM / 16u)) * CB;
  coopmat<float, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator> acc[CB];
  [[unroll]] for (uint j = 0u; j < CB; j++) acc[j] = coopmat<float, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator>(0.0);
  coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseA> a;
  coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseB> b;
#ifdef SPLIT
  // the cross terms hi·lo + lo·hi, times LO, summed apart (and the lo·lo term, ~2^-22 of a product, left out)
  coopmat<float, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator> accL[CB];
  [[unroll]] for (uint j = 0u; j < CB; j++) accL[j] = acc[j];
  coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseA> al;
  coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseB> bl;
#endif
#ifdef GLU
  coopmat<float, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator> accU[CB], accUL[CB];
  [[unroll]] for (uint j = 0u; j < CB; j++) { accU[j] = acc[j]; accUL[j] = acc[j]; }
  coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseA> au, aul;
#endif
  // step k0's weight values and activations, decoded into registers: the next step's are fetched
  // while the current one multiplies (its global loads in flight during the matrix products)
  float wr[DJ][8], ur[DJ][8], xr[XL];
  fetch(0u, wo, dg, xo, wr, ur, xr);
  for (uint k0 = 0u; k0 < pc.n; k0 += BK) {
    barrier();
    [[unroll]] for (uint q = 0u; q < DJ; q++) {
      uint r = dr + (NT / 4u) * q;
      PUT(WS, r * SK + 2u * dg, vec4(wr[q][0], wr[q][1], wr[q][2], wr[q][3]));
      PUT(WS, r * SK + 2u * dg + 1u, vec4(wr[q][4], wr[q][5], wr[q][6], wr[q][7]));
#ifdef GLU
      PUT(US, r * SK + 2u * dg, vec4(ur[q][0], ur[q][1], ur[q][2], ur[q][3]));
      PUT(US, r * SK + 2u * dg + 1u, vec4(ur[q][4], ur[q][5], ur[q][6], ur[q][7]));
#endif
    }
    [[unroll]] for (uint i = 0u; i < XL; i += 4u) PUT(XS, xs * SK + (xk + i) / 4u, vec4(xr[i], xr[i + 1u], xr[i + 2u], xr[i + 3u]));
    barrier();
    if (k0 + BK < pc.n) fetch(k0 + BK, wo, dg, xo, wr, ur, xr);
    [[unroll]] for (uint kk = 0u; kk < BK / 4u; kk += 4u) {
      // A: rows of W (row-major); B: the tokens' values (token-major = column-major K × N)
      coopMatLoad(a, WS, rb * 16u * SK + kk, SK, gl_CooperativeMatrixLayoutRowMajor);
#ifdef SPLIT
      coopMatLoad(al, WSL, rb * 16u * SK + kk, SK, gl_CooperativeMatrixLayoutRowMajor);
#endif
#ifdef GLU
      coopMatLoad(au, US, rb * 16u * SK + kk, SK, gl_CooperativeMatrixLayoutRowMajor);
      coopMatLoad(aul, USL, rb * 16u * SK + kk, SK, gl_CooperativeMatrixLayoutRowMajor);
#endif
      [[unroll]] for (uint j = 0u; j < CB; j++) {
        coopMatLoad(b, XS, (cb + j) * 16u * SK + kk, SK, gl_CooperativeMatrixLayoutColumnMajor);
        acc[j] = coopMatMulAdd(a, b, acc[j]);
#ifdef GLU
        accU[j] = coopMatMulAdd(au, b, accU[j]);
#endif
#ifdef SPLIT
        coopMatLoad(bl, XSL, (cb + j) * 16u * SK + kk, SK, gl_CooperativeMatrixLayoutColumnMajor);
        accL[j] = coopMatMulAdd(al, b, accL[j]);
        accL[j] = coopMatMulAdd(a, bl, accL[j]);
#ifdef GLU
        accUL[j] = coopMatMulAdd(aul, b, accUL[j]);
        accUL[j] = coopMatMulAdd(au, bl, accUL[j]);
#endif
#endif
      }
    }
  }
  barrier();
#ifdef SPLIT
  [[unroll]] for (uint j = 0u; j < CB; j++) acc[j] = acc[j] + accL[j] * (1.0 / LO);
#ifdef GLU
  [[unroll]] for (uint j = 0u; j < CB; j++) accU[j] = accU[j] + accUL[j] * (1.0 / LO);
#endif
#endif
  // outputs: each thread stores BM·BN/NT of them, consecutive threads consecutive rows of a token
  const uint PER = BM * BN / NT;
  float g[PER];
  [[unroll]] for (uint j = 0u; j < CB; j++) coopMatStore(acc[j], CS, (cb + j) * 16u * SC + rb * 16u, SC, gl_CooperativeMatrixLayoutColumnMajor);
  barrier();
  [[unroll]] for (uint i = 0u; i < PER; i++) {
    uint idx = tid + NT * i;
    g[i] = CS[(idx / BM) * SC + idx % BM];
  }
#ifdef GLU
  barrier();
  [[unroll]] for (uint j = 0u; j < CB; j++) coopMatStore(accU[j], CS, (cb + j) * 16u * SC + rb * 16u, SC, gl_CooperativeMatrixLayoutColumnMajor);
  barrier();
  [[unroll]] for (uint i = 0u; i < PER; i++) {
    uint idx = tid + NT * i;
    g[i] = siluf(g[i]) * CS[(idx / BM) * SC + idx % BM];
  }
#endif
  [[unroll]] for (uint i = 0u; i < PER; i++) {
    uint idx = tid + NT * i, s = idx / BM, r = r0 + idx % BM;
    if (s < count && r < pc.rows) Y[pc.yOffset + yRow[s] * pc.yStride + r] = g[i];
  }
}
