// Body of mmc.comp and mmc_moe.comp: mm.glsl's tiled matmul on the device's matrix units
// (GL_KHR_cooperative_matrix, CM × CM × CM f16 products with f32 accumulation; CM = 16, the shape
// the engine checks for). Same push block and bindings as mm.comp / mm_moe.comp, so the engine
// swaps one for the other where the device has the matrix units (graph.ts matvecOp); mm stays the
// fallback and the reference the parity runs compare against.
// Per BK = 32-value step the threads decode the weight tile into shared memory (WS) and stage the
// activation tile (XS). With SPLIT (every module defines it) each activation is held as two f16, hi
// (its first 11 significant bits) in XS and lo (the rest, times LO) in XSL, so products keep ~22
// significant bits an operand with f32 sums, within f32's tolerances of mm's (one f16 an operand,
// without SPLIT, moved the tiny random models' logits by up to ~1: docs/vulkan.md). The weights:
// - SCALED (types whose decodeqs gives integer values exact in f16 and one scale per aligned
//   DECODE_SCALED values: Q8_0's 32, IQ2_XXS's 256): WS holds the integers; a scale
//   span's products go to a fresh accumulator P as q·hi + (q/LO)·(LO·lo), and P times the rows'
//   scales (a CM × CM matrix of them, each row's scale in every column) is added to the sums at
//   the span's end: two products a pair of fragments, one weight array. (Q2_K's mins made its
//   scaled form 3.5× slower than the split one on the H200, the mins taken off at each span's end
//   in f32: docs/journal/prefill-matrix-units-2026-12-04-to-12-05.md; it stays split.)
// - otherwise the weights are split as the activations are (WSL: their lo parts), a product is
//   hi·hi + (hi·lo + lo·hi) / LO, the cross terms in accumulators of their own.
// A step's loads are issued SETS steps ahead (the module's 1 or 2), into one of SETS sets of
// registers, decoded there or (RAW_LOADS) when the step is staged (mmc_step.glsl is one step).
// Subgroup s owns the CM-row block s % (BM / CM) of the BM-row tile and CB CM-token blocks of the
// tile's tokens; each of its accumulators goes through its own CM × CM scratch (CS) to the stores.
// GLU (the _glu modules, graph.ts picks them by the flag): the up rows (pc.upBytes on) decode into
// US and multiply into accumulators of their own; the stores write silu(gate)·up as mm.glsl does.
// The GLU is a module of its own, not a branch on the flag: the plain kernels then need few enough
// registers for two workgroups a multiprocessor (with the branch every kernel held one:
// docs/vulkan.md).
// Needs SG-lane subgroups and CM × CM × CM f16 → f32 subgroup-scope products (the engine's
// modules: 32 and 16, which the engine checks the device for; builds with CM = 8 and SG = 8 serve
// checks on a device that lists only that shape, Mesa's lavapipe: mmc-check --fragment 8) and n % 32 == 0; shared memory at most 48 KiB (NVIDIA's Vulkan
// limit; limits.ts MMC_SHARED_BYTES: a device with less takes the f32 tiles).
#extension GL_GOOGLE_include_directive : enable
#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#include "common.glsl"

// the fragment edge and the subgroup size (the engine's: 16 and 32; checks build others)
#ifndef CM
#define CM 16u
#endif
#ifndef SG
#define SG 32u
#endif
// weight rows a tile: 64 unless the module sets BM_ROWS (mmc.comp: 128, graph.ts MMC_ROWS)
#ifndef BM_ROWS
#define BM_ROWS 64u
#endif
const uint BM = BM_ROWS, BK = 32u, XL = BN * BK / NT, DJ = 4u * BM / NT;
// the sets of loads in flight (the module says: 1 or 2)
#ifndef SETS
#define SETS 1u
#endif
// subgroups, CM-row blocks of the tile, and each subgroup's CM × CM output blocks
const uint NSG = NT / SG, RB = BM / CM, CB = RB * (BN / CM) / NSG;
// a CM × CM f32 matrix's elements a lane handles when it goes through shared memory
const uint PE = CM * CM / SG;
// shared rows as f16vec4: BK values + 8 of padding (80 bytes: every row 16-byte aligned, and
// neighbouring rows start on other banks)
const uint SK = (BK + 8u) / 4u;
layout(local_size_x = NT) in;
#include "mm_bindings.glsl"

#include "decode.glsl"
#if defined(SPLIT) && defined(DECODE_SCALED)
#define SCALED
#endif

#define ACC coopmat<float, gl_ScopeSubgroup, CM, CM, gl_MatrixUseAccumulator>
#define MA coopmat<float16_t, gl_ScopeSubgroup, CM, CM, gl_MatrixUseA>
#define MB coopmat<float16_t, gl_ScopeSubgroup, CM, CM, gl_MatrixUseB>

shared f16vec4 WS[BM * SK];
shared f16vec4 XS[BN * SK];
#ifdef GLU
shared f16vec4 US[BM * SK];
#endif
#ifdef SPLIT
// the parts f16 leaves out, times LO (2^11: kept clear of f16's subnormals)
const float LO = 2048.0;
shared f16vec4 XSL[BN * SK];
#ifdef SCALED
// the step's scale of each row (and of its up row)
shared float SW[BM];
#ifdef GLU
shared float SU[BM];
#endif
#else
shared f16vec4 WSL[BM * SK];
#ifdef GLU
shared f16vec4 USL[BM * SK];
#endif
#endif
#endif
// each subgroup's CM × CM scratch: its accumulators on their way to Y, the rows' scales
shared float CS[NSG * CM * CM];
#define MM_TILE_DECL
#include "mm_tile.glsl"
#undef MM_TILE_DECL

// one step's loads for a thread: its weight groups (and their up rows for a GLU), decoded at once
// or, RAW_LOADS (the module says) with a DECODE_RAW type (F32, Q8_0, Q2_K, IQ2_XXS), as the words
// decode.glsl's rawq reads, decoded only when the step is staged so that the loads stay in flight
// until then; and its XL activations (where its slot is in use)
#if defined(RAW_LOADS) && defined(DECODE_RAW)
#define FETCH_RAW
#endif
struct Fetch {
#ifdef FETCH_RAW
  RAWW w[DJ], u[DJ];
#else
  float w[DJ][8], u[DJ][8];
#ifdef SCALED
  float s[DJ], su[DJ];   // the groups' span scales
#endif
#endif
  float x[XL];
};
void load(uint k0, uint wo[DJ], uint dg, uint xo, bool xlive, out Fetch f) {
  uint g = k0 / 8u + dg;
  [[unroll]] for (uint q = 0u; q < DJ; q++) {
#ifdef FETCH_RAW
    rawq(wo[q], g, f.w[q]);
#ifdef GLU
    rawq(wo[q] + pc.upBytes, g, f.u[q]);
#endif
#elif defined(SCALED)
    vec2 sc;
    decodeqs(wo[q], g, f.w[q], sc);
    f.s[q] = sc.x;
#ifdef GLU
    decodeqs(wo[q] + pc.upBytes, g, f.u[q], sc);
    f.su[q] = sc.x;
#endif
#else
    decode(wo[q], g, f.w[q]);
#ifdef GLU
    decode(wo[q] + pc.upBytes, g, f.u[q]);
#endif
#endif
  }
  [[unroll]] for (uint i = 0u; i < XL; i++) f.x[i] = xlive ? X[xo + k0 + i] : 0.0;
}

// v as f16 in hi (and, SPLIT, the rest times LO in lo[i]) at element i of a shared array
#ifdef SPLIT
// hi keeps f16's 11 significant bits by clearing the other 13 of the f32 (exact in f16 across its
// normal range; a conversion round trip v - f32(f16(v)) was folded to 0 by a driver), lo the rest
#define PUT(A, i, v) { vec4 v_ = (v); vec4 h_ = uintBitsToFloat(floatBitsToUint(v_) & 0xFFFFE000u); A[i] = f16vec4(h_); A##L[i] = f16vec4((v_ - h_) * LO); }
#else
#define PUT(A, i, v) A[i] = f16vec4(v)
#endif
// the weights: SCALED, integers (exact in f16); else as the activations
#ifdef SCALED
#define PUTW(A, i, v) A[i] = f16vec4(v)
#else
#define PUTW(A, i, v) PUT(A, i, v)
#endif

// token block j's products of one weight fragment A_ (and its lo part or scaled copy AL_) into
// the sums S_ and the step's or cross-term sums SL_
#ifdef SCALED
#define PRODUCTS(A_, AL_, S_, SL_) { SL_[j] = coopMatMulAdd(A_, b, SL_[j]); SL_[j] = coopMatMulAdd(AL_, bl, SL_[j]); }
#elif defined(SPLIT)
#define PRODUCTS(A_, AL_, S_, SL_) { S_[j] = coopMatMulAdd(A_, b, S_[j]); SL_[j] = coopMatMulAdd(AL_, b, SL_[j]); SL_[j] = coopMatMulAdd(A_, bl, SL_[j]); }
#else
#define PRODUCTS(A_, AL_, S_, SL_) S_[j] = coopMatMulAdd(A_, b, S_[j]);
#endif

// mmc_step.glsl: group g of the row at o for this thread's slot q, from the Fetch set F_ (its
// field W_, with SCALED its scales in S_), as the shared array A stages it (SCALED: the integers,
// and the span's scale in SA, which the row's four groups share: one thread writes it)
#ifdef FETCH_RAW
#ifdef SCALED
#define GROUP_VALUES(W_, S_, o) { vec2 sc_; decodeqsr(F_.W_[q], o, g, w_, sc_); s_ = sc_.x; }
#else
#define GROUP_VALUES(W_, S_, o) decoder(F_.W_[q], o, g, w_);
#endif
#elif defined(SCALED)
#define GROUP_VALUES(W_, S_, o) { w_ = F_.W_[q]; s_ = F_.S_[q]; }
#else
#define GROUP_VALUES(W_, S_, o) w_ = F_.W_[q];
#endif
#ifdef SCALED
#define GROUP_SCALE(SA) if (dg == 0u) SA[r] = s_;
#else
#define GROUP_SCALE(SA)
#endif
#define STAGE_GROUP(W_, S_, o, A, SA) { \
  float w_[8], s_; \
  GROUP_VALUES(W_, S_, o) \
  PUTW(A, r * SK + 2u * dg, vec4(w_[0], w_[1], w_[2], w_[3])); \
  PUTW(A, r * SK + 2u * dg + 1u, vec4(w_[4], w_[5], w_[6], w_[7])); \
  GROUP_SCALE(SA) }

#ifdef SCALED
// sums += P ⊙ (the subgroup's rows' scales in every column), through the subgroup's scratch
#ifdef IDX_SCALES
// (the GLU modules: each element times its row's scale, the row read from ix, the matrix of the
// elements' indices, instead of through a scale matrix in the subgroup's scratch; the plain modules
// keep the matrix, IDX_SCALES took them to 142 registers and 8% longer: docs/vulkan.md)
#define APPLY_SCALES(S_, P_, ACC_) { \
  [[unroll]] for (uint j = 0u; j < CB; j++) if (cb + j < nb) for (int i_ = 0; i_ < ACC_[j].length(); i_++) ACC_[j][i_] += P_[j][i_] * S_[rb * CM + uint(ix[i_]) / CM]; }
#else
#define APPLY_SCALES(S_, P_, ACC_) { \
  [[unroll]] for (uint e = 0u; e < PE; e++) { uint i_ = lane + SG * e; CS[cs + i_] = S_[rb * CM + i_ / CM]; } \
  subgroupMemoryBarrierShared(); subgroupBarrier(); \
  ACC sm_; \
  coopMatLoad(sm_, CS, cs, CM, gl_CooperativeMatrixLayoutRowMajor); \
  [[unroll]] for (uint j = 0u; j < CB; j++) if (cb + j < nb) ACC_[j] = ACC_[j] + P_[j] * sm_; \
  subgroupBarrier(); }
#endif
#endif

void main() {
  uint tid = gl_LocalInvocationID.x;
  uint r0 = gl_WorkGroupID.x * BM;
#ifdef OVERDISPATCH
  // (scripts/experiments/tiles: modules whose tile is larger than the one the engine dispatches
  // for; the extra workgroups leave)
  if (r0 >= pc.rows) return;
#ifndef MOE
  if (gl_WorkGroupID.y * BN >= pc.nRows) return;
#endif
#endif
#include "mm_tile.glsl"
  // this subgroup's blocks: rows CM·rb …, tokens CM·(cb + j) … for j < CB; its scratch at cs
  uint sg = gl_SubgroupID, lane = gl_SubgroupInvocationID, rb = sg % RB, cb = (sg / RB) * CB, cs = sg * CM * CM;
  // token blocks holding the tile's count slots: a block past them is not multiplied, nor are
  // the slots past count staged (a routed tile of a short prefill holds a few pairs of its BN; a
  // product's column depends on its own slot only, so what those slots hold stays in columns no
  // store reads). Uniform in each subgroup, as the matrix operations need. The subgroup barriers
  // stay outside such branches: lavapipe (Mesa 26.1) gave wrong sums with them inside.
  uint nb = (count + CM - 1u) / CM;
  bool xlive = xs < count;
#if defined(IDX_SCALES) && defined(SCALED)
  [[unroll]] for (uint e = 0u; e < PE; e++) CS[cs + lane + SG * e] = float(lane + SG * e);
  subgroupMemoryBarrierShared(); subgroupBarrier();
  ACC ix;
  coopMatLoad(ix, CS, cs, CM, gl_CooperativeMatrixLayoutRowMajor);
  subgroupBarrier();
#endif
  ACC acc[CB];
  [[unroll]] for (uint j = 0u; j < CB; j++) acc[j] = ACC(0.0);
  MA a;
  MB b;
#ifdef SPLIT
  // SCALED: a step's products before the rows' scales; else the cross terms hi·lo + lo·hi, times
  // LO, summed apart (and the lo·lo term, ~2^-22 of a product, left out)
  ACC accL[CB];
  [[unroll]] for (uint j = 0u; j < CB; j++) accL[j] = acc[j];
  MA al;
  MB bl;
#endif
#ifdef GLU
  ACC accU[CB], accUL[CB];
  [[unroll]] for (uint j = 0u; j < CB; j++) { accU[j] = acc[j]; accUL[j] = acc[j]; }
  MA au, aul;
#endif
  // SETS sets of one step's loads, each refilled SETS steps ahead: a step's loads are in flight
  // while the steps before it stage and multiply. The routed gate+up takes two with RAW_LOADS
  // (its products, a few fragments a subgroup at a short prefill's tiles, cover too little of a
  // load's latency: decoding at the load waits for the loads there, as FETCH2's two sets did); the
  // others were no faster or slower that way and keep one set decoded at the load (docs/journal/
  // prefill-matrix-units-2026-12-04-to-12-05.md, "Raw loads")
  Fetch fa, fb;
  load(0u, wo, dg, xo, xlive, fa);
  if (SETS == 2u && BK < pc.n) load(BK, wo, dg, xo, xlive, fb);
  for (uint k0 = 0u; k0 < pc.n; k0 += SETS * BK) {
    uint kS = k0;
#define F_ fa
#include "mmc_step.glsl"
#undef F_
    // (uniform in the workgroup, so its barriers are too)
    if (SETS == 2u && k0 + BK < pc.n) {
      kS = k0 + BK;
#define F_ fb
#include "mmc_step.glsl"
#undef F_
    }
  }
#if defined(SPLIT) && !defined(SCALED)
  [[unroll]] for (uint j = 0u; j < CB; j++) acc[j] = acc[j] + accL[j] * (1.0 / LO);
#ifdef GLU
  [[unroll]] for (uint j = 0u; j < CB; j++) accU[j] = accU[j] + accUL[j] * (1.0 / LO);
#endif
#endif
  // outputs, one accumulator at a time through the subgroup's scratch (column-major: token t's
  // CM rows at t·CM), each lane PE of them, consecutive lanes consecutive rows of a token
  [[unroll]] for (uint j = 0u; j < CB; j++) {
#ifdef GLU
    // gate and up share the layout, so silu(gate)·up is elementwise on each lane's elements
    for (int i = 0; i < acc[j].length(); i++) acc[j][i] = siluf(acc[j][i]) * accU[j][i];
#endif
    coopMatStore(acc[j], CS, cs, CM, gl_CooperativeMatrixLayoutColumnMajor);
    subgroupMemoryBarrierShared();
    subgroupBarrier();
    [[unroll]] for (uint e = 0u; e < PE; e++) {
      uint i = lane + SG * e, s = (cb + j) * CM + i / CM, r = r0 + rb * CM + i % CM;
      if (s < count && r < pc.rows) Y[pc.yOffset + yRow[s] * pc.yStride + r] = CS[cs + i];
    }
    subgroupBarrier();
  }
}
