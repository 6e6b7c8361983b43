#version 450
// attn_mmc: attn_tile on the matrix units (GL_KHR_cooperative_matrix, 16 × 16 × 16 f16 products,
// f32 sums). attn_tile's dispatch, push block (with kScales / vLo, the word offsets of K's scales
// and V's lo halves in KD and VD, where attn_tile has the rows' bytes) and outputs (the partials P
// and ML that attn_merge combines), so the step swaps one for the other where the device has the matrix units;
// attn_tile stays the fallback and the reference the parity runs compare against. Its operands come
// decoded once by attn_decode.comp (Q's two f16 halves, K's values as f16 and their scales, V's two
// f16 halves: that file's header has the layouts), so a 64-key tile only copies them into shared
// memory with 8-byte loads: decoding and splitting them for every tile of every query tile took
// about a tenth of the kernel (docs/vulkan.md).
// Per tile of 64 keys: S = Q·Kᵀ over 32-dim slices staged in shared memory, the online softmax
// of attn_tile in f32 (its code unchanged), then O += P·V over 16-key slices (V staged 128 dims at
// a time). Every operand is held as two f16 as in mmc.glsl (hi: the value's first 11 significant
// bits; lo: the rest, times LO), so products keep ~22 significant bits: one f16 an operand moved
// the tiny random models' logits by up to ~1 (docs/vulkan.md).
// K is held exactly: an f16 cache's values are f16 (KEXACT: Q's hi and lo times K, two products
// into accumulators of their own, Q may be too large to scale by LO in f16), a q8_0 or q4_0 cache's
// are integers with one scale per key and 32 dims (KSCALED: a dim slice's q·Qhi + (q/LO)·(LO·Qlo)
// in one fresh accumulator, whose elements are then each multiplied by their key's scale and
// added to S). An f32 cache's K is not exact in f16: those layers keep attn_tile (graph.ts).
// P lies in [0, 1], so P·V goes into one accumulator as (LO·Ph)·Vh + Ph·(LO·Vl) + (LO·Pl)·Vh,
// divided by LO at the end: half the accumulator registers.
// The online softmax's per-row rescale of O cannot touch a cooperative matrix's rows directly:
// each element of O is multiplied by its row's alpha (found through a matrix of the elements'
// indices, ix), only where one of the subgroup's
// rows' maximum grew (a subgroup vote; a workgroup-shared 'grew' flag in its place turned the
// first query row's scores into NaN on the H200's driver, cause not found: docs/vulkan.md).
// Tiles past the first mostly keep every row's maximum.
// Subgroup s (the engine's modules: 32 lanes, 16 a workgroup at NT = 512) owns the CM query rows CM·(s % RBN) …;
// of S the key blocks SKB·(s / RBN) …; of O the dim blocks NQ·j + s / RBN of each 128-dim pass
// (hd ≤ 256). Needs SG-lane subgroups and CM × CM × CM f16 → f32 subgroup products (the engine's:
// 32 and 16, its matrix-unit check; 8 and 8 for checks on lavapipe, docs/toolchain.md), hd a
// multiple of 32, ≤ 256.
#extension GL_GOOGLE_include_directive : enable
#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_vote : require
#extension GL_KHR_shader_subgroup_shuffle : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#include "common.glsl"
// threads a workgroup (NT): the engine's 512, the subgroups sharing out S's key blocks and O's
// dims, so each holds fewer accumulators and more of them fit a multiprocessor than the one
// 193-register workgroup of 256 (scripts/experiments/attn builds that form; the two measured:
// docs/vulkan.md, "Kernel choices")
#ifndef NT
#define NT 512
#endif
layout(local_size_x = NT) in;
layout(std430, binding = 0) readonly buffer QB { uvec2 QD[]; };   // 4 halves a word pair
layout(std430, binding = 1) readonly buffer KB2 { uvec2 KD[]; };
layout(std430, binding = 1) readonly buffer KBF { float KDF[]; };
layout(std430, binding = 2) readonly buffer VB2 { uvec2 VD2[]; };
layout(std430, binding = 3) writeonly buffer PPB { float P[]; };
layout(std430, binding = 4) writeonly buffer MLB { vec2 ML[]; };
layout(std430, binding = 5) readonly buffer PB { uint PARAMS[]; };
layout(push_constant) uniform PC {
  uint nHead; uint nHeadKv; uint hd; uint kScales;
  uint vLo; uint qStride; float scale; uint nBlk;
  uint blk; uint t0; uint nTok; uint tq;
} pc;
#if KT < 1
#error "attn_mmc: a q8_0, q4_0 or f16 K"
#endif
#define KEXACT
#if KT >= 2
#define KSCALED
#endif
f16vec4 h4(uvec2 w) { return f16vec4(unpackFloat2x16(w.x), unpackFloat2x16(w.y)); }

// the fragment edge and the subgroup size (the engine's: 16 and 32; checks build 8 and 8 for a
// device that lists only that shape: attn-mmc-check --fragment 8, docs/toolchain.md)
#ifndef CM
#define CM 16u
#endif
#ifndef SG
#define SG 32u
#endif
#define ACC coopmat<float, gl_ScopeSubgroup, CM, CM, gl_MatrixUseAccumulator>
#define MA coopmat<float16_t, gl_ScopeSubgroup, CM, CM, gl_MatrixUseA>
#define MB coopmat<float16_t, gl_ScopeSubgroup, CM, CM, gl_MatrixUseB>
const uint R = 64u;    // query rows per workgroup
const uint BC = 64u;   // keys per tile
const uint DS = 32u;   // dims per staging step of S
const uint VD = 128u;  // dims per staging pass of V
const uint PS = BC + 4u;
const float LO = 2048.0;
// subgroups, CM-row blocks of the R rows, and the subgroups sharing a row block (NQ): each takes
// SKB of S's key blocks and ODB of O's dim blocks of each VD-dim pass; PE: a CM × CM f32 matrix's
// elements a lane handles through shared memory
const uint NTH = uint(NT), NSG = NTH / SG, RBN = R / CM, NQ = NSG / RBN, SKB = (BC / CM) / NQ, ODB = (VD / CM) / NQ, PE = CM * CM / SG;
// shared rows as f16vec4 with 8 values of padding (16-byte aligned rows on other banks)
const uint SQ = (DS + 8u) / 4u;    // a Q or K row of a dim slice
const uint SP = (16u + 8u) / 4u;   // a P row of a 16-key slice
const uint SV = (VD + 8u) / 4u;    // a V row (one key) of a pass
// the staging threads: TPR a Q row or key of a dim slice (QE of its f16vec4 each), VPK a V key
// of a pass (VE each); the softmax's TPR a row (BC / TPR keys each)
const uint TPR = NTH / R, QE = DS / (4u * TPR), VPK = NTH / 16u, VE = VD / (4u * VPK), KPT = BC / TPR;
// O's accumulators a subgroup: two 128-dim passes of ODB blocks
const uint NO = 2u * ODB;
// one staging array for both phases: S: Q hi, Q lo, K (64 rows each); P·V: P hi, P lo (64 rows),
// V hi, V lo (16 keys)
const uint QH = 0u, QL = R * SQ, KH = 2u * R * SQ;
const uint PH = 0u, PL = R * SP, VH = 2u * R * SP, VL = 2u * R * SP + 16u * SV;
const uint ST_LEN = max(3u * R * SQ, 2u * R * SP + 32u * SV);
shared f16vec4 ST[ST_LEN];
shared float ps[R * PS];          // scores, then probabilities; at the end each subgroup's 16 × 16 output scratch
shared float rowM[R];
shared float rowL[R];
shared float rowA[R];
shared uint rowPos[R];            // the row's token position (its last visible key); 0 for padding
#ifdef KSCALED
shared float DKS[BC];             // the dim slice's scale of each key
#endif

// the sum of a row's TPR partial sums (adjacent lanes), pairwise by lane bits: for TPR ≤ 8 the
// order attn_tile sums its four (and two fours) in, so the rows' sums stay its bits
float rowSum(float x) {
  [[unroll]] for (uint k = 1u; k < TPR; k <<= 1) x += subgroupShuffleXor(x, k);
  return x;
}

// v as hi (11 significant bits, by mask: exact in f16 across its normal range) at element i of the
// staging array and the rest times LO at element i + lo
void put(uint i, uint lo, vec4 v) {
  vec4 h = uintBitsToFloat(floatBitsToUint(v) & 0xFFFFE000u);
  ST[i] = f16vec4(h);
  ST[i + lo] = f16vec4((v - h) * LO);
}

#ifdef KSCALED
#define K_SCALE_LOAD(kt_, d_) if ((kt_) + sr < uEnd) ksr = KDF[pc.kScales + ((kt_) + sr) * (kvDim / 32u) + (kd + (d_) + sd) / 32u];
#else
#define K_SCALE_LOAD(kt_, d_)
#endif
// this thread's Q values and K words of dim slice d_ of the tile at kt_ (keys past uEnd: none)
#define QK_LOAD(kt_, d_) { \
  [[unroll]] for (uint e = 0u; e < QE; e++) { \
    qh[e] = QD[(qOff + (d_)) / 4u + e]; \
    ql[e] = QD[(qLoOff + qOff + (d_)) / 4u + e]; \
    if ((kt_) + sr < uEnd) kr[e] = KD[(((kt_) + sr) * kvDim + kd + (d_) + sd) / 4u + e]; \
  } \
  K_SCALE_LOAD(kt_, d_) \
}
// the words of V rows' elements d … d + 7 for this thread's key of slice j0_ in pass p_ (none past
// the tile or the head: PV_PASS stages 0 there)
#define V_LOAD(j0_, p_) { \
  uint d_ = (p_) * VD + vd; \
  if ((j0_) + vk < nk && d_ < hd) [[unroll]] for (uint e = 0u; e < VE; e++) { \
    uint w_ = ((kt + (j0_) + vk) * kvDim + kd + d_) / 4u + e; \
    vr[e] = uvec4(VD2[w_], VD2[pc.vLo / 2u + w_]); \
  } \
}

// one 128-dim pass p of O += P·V for the keys j0 … j0 + 15 (P staged in pass 0; V from the words
// loaded in vr, which then take the next pass's, so their latency passes during this one's products)
#define PV_PASS(p) { \
  barrier(); \
  if (p == 0u && tid < 4u * R) { \
    uint c = (tid & 3u) * 4u, r = tid >> 2u; \
    put(PH + r * SP + (tid & 3u), PL - PH, vec4(ps[r * PS + j0 + c], ps[r * PS + j0 + c + 1u], ps[r * PS + j0 + c + 2u], ps[r * PS + j0 + c + 3u])); \
  } \
  { \
    uint d = p * VD + vd; \
    bool ok = j0 + vk < nk && d < hd; \
    [[unroll]] for (uint e = 0u; e < VE; e++) { \
      ST[VH + vk * SV + vd / 4u + e] = ok ? h4(vr[e].xy) : f16vec4(0.0); \
      ST[VL + vk * SV + vd / 4u + e] = ok ? h4(vr[e].zw) : f16vec4(0.0); \
    } \
  } \
  barrier(); \
  if (p == 0u && passes > 1u) V_LOAD(j0, 1u) \
  else if (j0 + 16u < nk) V_LOAD(j0 + 16u, 0u) \
  [[unroll]] for (uint kq = 0u; kq < 16u; kq += CM) { \
    MA pa, pal, pa1; \
    coopMatLoad(pa, ST, PH + rb * CM * SP + kq / 4u, SP, gl_CooperativeMatrixLayoutRowMajor); \
    coopMatLoad(pal, ST, PL + rb * CM * SP + kq / 4u, SP, gl_CooperativeMatrixLayoutRowMajor); \
    pa1 = pa * float16_t(LO); \
    [[unroll]] for (uint j = 0u; j < ODB; j++) { \
      uint db = NQ * j + hf; \
      if (p * VD + db * CM < hd) { \
        MB vb, vbl; \
        coopMatLoad(vb, ST, VH + kq * SV + db * (CM / 4u), SV, gl_CooperativeMatrixLayoutRowMajor); \
        coopMatLoad(vbl, ST, VL + kq * SV + db * (CM / 4u), SV, gl_CooperativeMatrixLayoutRowMajor); \
        o[p * ODB + j] = coopMatMulAdd(pa1, vb, o[p * ODB + j]); \
        o[p * ODB + j] = coopMatMulAdd(pa, vbl, o[p * ODB + j]); \
        o[p * ODB + j] = coopMatMulAdd(pal, vb, o[p * ODB + j]); \
      } \
    } \
  } \
}

// accumulator oi's 16 × 16 values (dims p·128 + 16·db …) into the partials P, divided by LO,
// through the subgroup's 256 floats of ps (free once the last tile's P·V is done)
#define O_OUT(oi) { \
  uint d = (oi / ODB) * VD + (NQ * (oi % ODB) + hf) * CM; \
  if (oi < NO && d < hd) { \
    /* o[oi] for oi ≥ NO (NT = 512 writes out only NO): glslang rejects the constant index even where the branch is dead */ \
    coopMatStore(o[oi < NO ? oi : 0u] * (1.0 / LO), ps, sg * CM * CM, CM, gl_CooperativeMatrixLayoutRowMajor); \
    subgroupMemoryBarrierShared(); \
    subgroupBarrier(); \
    [[unroll]] for (uint i = 0u; i < PE; i++) { \
      uint e = lane + SG * i, r = rb * CM + e / CM; \
      if (r < rows) P[(((tok0 + r / G) * pc.nHead + kvh * G + r % G) * pc.nBlk + b) * hd + d + e % CM] = ps[sg * CM * CM + e]; \
    } \
    subgroupBarrier(); \
  } \
}

void main() {
  uint tile = gl_WorkGroupID.x, kvh = gl_WorkGroupID.y, b = gl_WorkGroupID.z, tid = gl_LocalInvocationID.x;
  uint G = pc.nHead / pc.nHeadKv, hd = pc.hd, tq = pc.tq;
  uint tok0 = tile * tq;
  uint ntk = min(tq, pc.nTok - tok0);
  uint base = PARAMS[0] + pc.t0;
  uint u0 = b * pc.blk;
  uint pLast = base + tok0 + ntk - 1u;
  if (u0 > pLast) return;                        // the block is in every row's future
  uint uEnd = min(u0 + pc.blk, pLast + 1u);
  uint rows = ntk * G;
  if (tid < R) {
    rowM[tid] = -3.0e38;
    rowL[tid] = 0.0;
    rowPos[tid] = tid < rows ? base + tok0 + tid / G : 0u;
  }
  uint sg = gl_SubgroupID, lane = gl_SubgroupInvocationID, rb = sg % RBN, hf = sg / RBN;
  uint passes = (hd + VD - 1u) / VD;
  // which element of a CM × CM f32 matrix each of this lane's is (row · CM + column): the layout
  // is the implementation's, the same for every matrix of the type (elementwise products rest on
  // that too), so each element finds its key's scale and its row's alpha (ps is free until S's
  // first store; 16-row matrices of them in shared memory put a fragment's rows on one bank group)
  if (tid < CM * CM) ps[tid] = float(tid);
  barrier();
  ACC ix;
  coopMatLoad(ix, ps, 0u, CM, gl_CooperativeMatrixLayoutRowMajor);
  ACC o[NO];
  [[unroll]] for (uint j = 0u; j < NO; j++) o[j] = ACC(0.0);
  // what this thread stages: Q row / key sr, dims sd … sd + 4·QE − 1 of each dim slice; V key vk,
  // dims vd … vd + 4·VE − 1 of each pass (P: row tid / 4, keys 4·(tid % 4) … of each key slice)
  uint sr = tid / TPR, sd = (tid % TPR) * 4u * QE, vk = tid / VPK, vd = (tid % VPK) * 4u * VE;
  // decoded Q: row ((kvh·nTok + t)·G + g) of hd halves (rows past the tokens: padding or other
  // rows, dropped at the outputs); lo rows after nTok·nHead + R rows
  uint qOff = ((kvh * pc.nTok + tok0) * G + sr) * hd + sd, qLoOff = (pc.nTok * pc.nHead + R) * hd;
  uint kd = kvh * hd, kvDim = pc.nHeadKv * hd;
  // the next dim slice's Q and K words load into registers while the current one multiplies, the
  // next tile's first during the last slice
  uvec2 qh[QE], ql[QE], kr[QE];
  float ksr = 0.0;
  [[unroll]] for (uint e = 0u; e < QE; e++) kr[e] = uvec2(0u);
  QK_LOAD(u0, 0u)
  for (uint kt = u0; kt < uEnd; kt += BC) {
    uint nk = min(BC, uEnd - kt);
    ACC s[SKB], sl[SKB];
    [[unroll]] for (uint c = 0u; c < SKB; c++) { s[c] = ACC(0.0); sl[c] = s[c]; }
    for (uint d0 = 0u; d0 < hd; d0 += DS) {
      barrier();
      float ksn = sr < nk ? ksr : 0.0;
      [[unroll]] for (uint e = 0u; e < QE; e++) {
        ST[QH + sr * SQ + sd / 4u + e] = h4(qh[e]);
        ST[QL + sr * SQ + sd / 4u + e] = h4(ql[e]);
        ST[KH + sr * SQ + sd / 4u + e] = sr < nk ? h4(kr[e]) : f16vec4(0.0);
      }
#ifdef KSCALED
      // the key's scale, once (its TPR staging threads share it)
      if (tid % TPR == 0u) DKS[sr] = ksn;
#endif
      barrier();
      if (d0 + DS < hd) QK_LOAD(kt, d0 + DS)
      else if (kt + BC < uEnd) QK_LOAD(kt + BC, 0u)
#ifdef KSCALED
      // the slice's products before its keys' scales
      [[unroll]] for (uint c = 0u; c < SKB; c++) sl[c] = ACC(0.0);
#endif
      [[unroll]] for (uint kk = 0u; kk < DS / 4u; kk += CM / 4u) {
        MA qa, qal;
        coopMatLoad(qa, ST, QH + rb * CM * SQ + kk, SQ, gl_CooperativeMatrixLayoutRowMajor);
        coopMatLoad(qal, ST, QL + rb * CM * SQ + kk, SQ, gl_CooperativeMatrixLayoutRowMajor);
        [[unroll]] for (uint c = 0u; c < SKB; c++) {
          MB kb, kbl;
          uint kr = (SKB * hf + c) * CM;
          coopMatLoad(kb, ST, KH + kr * SQ + kk, SQ, gl_CooperativeMatrixLayoutColumnMajor);
#if defined(KSCALED)
          // integers / LO stay exact in f16, so Q's lo part shares the accumulator
          kbl = kb * float16_t(1.0 / LO);
          sl[c] = coopMatMulAdd(qa, kb, sl[c]);
          sl[c] = coopMatMulAdd(qal, kbl, sl[c]);
#else
          s[c] = coopMatMulAdd(qa, kb, s[c]);
          sl[c] = coopMatMulAdd(qal, kb, sl[c]);
#endif
        }
      }
#ifdef KSCALED
      // each element times its key's scale (ix says which key, its column, an element is)
      [[unroll]] for (uint c = 0u; c < SKB; c++)
        for (int i = 0; i < sl[c].length(); i++) s[c][i] += sl[c][i] * DKS[(SKB * hf + c) * CM + uint(ix[i]) % CM];
#endif
    }
    [[unroll]] for (uint c = 0u; c < SKB; c++) {
#ifdef KSCALED
      s[c] = s[c] * pc.scale;
#else
      s[c] = (s[c] + sl[c] * (1.0 / LO)) * pc.scale;
#endif
      coopMatStore(s[c], ps, rb * CM * PS + (SKB * hf + c) * CM, PS, gl_CooperativeMatrixLayoutRowMajor);
    }
    // the tile's first V words, in flight during the softmax
    uvec4 vr[VE];
    [[unroll]] for (uint e = 0u; e < VE; e++) vr[e] = uvec4(0u);
    V_LOAD(0u, 0u)
    barrier();
    // online softmax (attn_tile's), TPR threads per row (KPT keys each): keys past the row's
    // position (or the tile) count as −∞
    {
      uint r = tid / TPR, j0 = (tid % TPR) * KPT;
      uint lim = r < rows ? min(nk, rowPos[r] + 1u - min(rowPos[r] + 1u, kt)) : 0u;
      float mOld = rowM[r], m = mOld;
      for (uint j = j0; j < min(lim, j0 + KPT); j++) m = max(m, ps[r * PS + j]);
      // a row's TPR threads are adjacent lanes: their max and sum by shuffles, no barrier
      [[unroll]] for (uint k = 1u; k < TPR; k <<= 1) m = max(m, subgroupShuffleXor(m, k));
      float l = 0.0;
      [[unroll]] for (uint j = j0; j < j0 + KPT; j++) {
        float e = j < lim ? exp(ps[r * PS + j] - m) : 0.0;
        ps[r * PS + j] = e;
        l += e;
      }
      l = rowSum(l);
      if (tid % TPR == 0u) {
        float alpha = exp(mOld - m);
        rowL[r] = rowL[r] * alpha + l;
        rowM[r] = m;
        rowA[r] = alpha;
      }
      barrier();
    }
    // O's rows times their alpha where one of the subgroup's rows' maximum grew (the first
    // tile's O is still 0), each element by its row (ix), a cooperative matrix's rows having no
    // other handle (no subgroup barrier inside this branch: lavapipe summed wrong with them there,
    // docs/toolchain.md)
    if (kt != u0 && subgroupAny(rowA[rb * CM + lane % CM] != 1.0)) {
      for (int i = 0; i < o[0].length(); i++) {
        float al = rowA[rb * CM + uint(ix[i]) / CM];
        [[unroll]] for (uint j = 0u; j < NO; j++) o[j][i] *= al;
      }
    }
    // O += P·V, 16 keys at a time (keys past the tile: P = 0 and V staged as 0, never garbage);
    // the two passes written out (PV_PASS), so every accumulator has a constant index (an array
    // of cooperative matrices indexed at run time stays an array in memory)
    for (uint j0 = 0u; j0 < nk; j0 += 16u) {
      PV_PASS(0u)
      if (passes > 1u) PV_PASS(1u)
    }
  }
  // the partials: O / LO through each subgroup's scratch, rows as attn_tile writes them
  barrier();
  O_OUT(0u) O_OUT(1u) O_OUT(2u) O_OUT(3u) O_OUT(4u) O_OUT(5u) O_OUT(6u) O_OUT(7u)
  if (tid < rows) {
    uint slot = ((tok0 + tid / G) * pc.nHead + kvh * G + tid % G) * pc.nBlk + b;
    ML[slot] = vec2(rowM[tid], rowL[tid]);
  }
}
