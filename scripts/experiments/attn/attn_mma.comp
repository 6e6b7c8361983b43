#version 450
// attn_mma (#44 experiment): shaders/attn_mmc.comp with its shared memory laid out as aliased
// blocks (GL_EXT_shared_memory_block; the device needs VK_KHR_workgroup_memory_explicit_layout with
// 16-bit access, which the addon enables where listed): one space seen as f16vec4, float and uint,
// whose regions serve several phases (the layout below). So the softmax writes the tile's P as two
// f16 once (no P staging a key slice) and P·V stages 16 keys × every dim a step: half of P·V's
// barriers. Same dispatch, push block, bindings, outputs and products as attn_mmc (its header
// says how the operands are split), built by scripts/experiments/attn/build.sh for bench-attn-tile
// and checked on lavapipe by attn-mmc-check --fragment 8 --source (test/coopmat-lavapipe.test.ts).
// IDX_SCALES: the key scales (q8_0 / q4_0 caches) and the rows' alphas applied to each element of
// S and O by its index, read from a matrix of the elements' indices (ix), in place of 16-row
// matrices of them in shared memory (their 64-float rows all on one bank group). DS64 (with
// IDX_SCALES, q8_0 / q4_0 caches): S staged 64 dims a step (two scale groups), half of S's barriers.
// Measured: docs/journal/prefill-matrix-units-2026-12-04-to-12-05.md, "2026-12-06".
#extension GL_GOOGLE_include_directive : enable
#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_vote : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_EXT_shared_memory_block : require
#include "common.glsl"
// threads a workgroup (NT): the engine's 512, the subgroups sharing out S's key blocks and O's
// dims, so each holds fewer accumulators and more of them fit a multiprocessor than the one
// 193-register workgroup of 256 (scripts/experiments/attn builds that form; the two measured:
// docs/vulkan.md, "Kernel choices")
#ifndef NT
#define NT 512
#endif
layout(local_size_x = NT) in;
layout(std430, binding = 0) readonly buffer QB { float QG[]; };
layout(std430, binding = 1) readonly buffer KB { uint KC[]; };
layout(std430, binding = 2) readonly buffer VB { uint VC[]; };
layout(std430, binding = 3) writeonly buffer PPB { float P[]; };
layout(std430, binding = 4) writeonly buffer MLB { vec2 ML[]; };
layout(std430, binding = 5) readonly buffer PB { uint PARAMS[]; };
layout(push_constant) uniform PC {
  uint nHead; uint nHeadKv; uint hd; uint kRowBytes;
  uint vRowBytes; uint qStride; float scale; uint nBlk;
  uint blk; uint t0; uint nTok; uint tq;
} pc;
// K held exactly: a 16-bit cache's values are f16 already (KEXACT); a quantized cache's are
// integers exact in f16 with one scale per key and 32 dims (KSCALED, the q8_0 and q4_0 caches)
#if KT >= 1
#define KEXACT
#define KV_FN4Q k_get4q
#endif
#if KT >= 2
#define KSCALED
#endif
#define KV_FN4 k_get4
#define KVBUF KC
#define KV_T KT
#include "kv.glsl"
#undef KV_FN4
#undef KV_FN4Q
#undef KVBUF
#undef KV_T
#define KV_FN4 v_get4
#define KVBUF VC
#define KV_T VT
#include "kv.glsl"

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
#if defined(DS64) && defined(KSCALED)
#ifndef IDX_SCALES
#error "DS64 needs IDX_SCALES"
#endif
const uint DS = 64u;   // dims per staging step of S (two scale groups of 32)
#else
const uint DS = 32u;   // dims per staging step of S
#endif
const uint VD = 128u;  // dims per O pass (an accumulator set)
const uint PS = BC + 4u;
const float LO = 2048.0;
const uint NTH = uint(NT), NSG = NTH / SG, RBN = R / CM, NQ = NSG / RBN, SKB = (BC / CM) / NQ, ODB = (VD / CM) / NQ, PE = CM * CM / SG;
// shared rows as f16vec4 with 8 values of padding (16-byte aligned rows on other banks)
const uint SQ = (DS + 8u) / 4u;    // a Q or K row of a dim slice
const uint SPP = (BC + 8u) / 4u;   // a P row of the tile (all its keys)
const uint SV = (2u * VD + 8u) / 4u;  // a V row (one key, every dim)
// the staging threads: TPR a Q row or key of a dim slice (QE of its f16vec4 each), VPK a V key
// (VE each, every dim); the softmax's TPR a row (BC / TPR keys each)
const uint TPR = NTH / R, QE = DS / (4u * TPR), VPK = NTH / 16u, VE = (2u * VD) / (4u * VPK), KPT = BC / TPR;
const uint NO = 2u * ODB;
// One 48 KiB space seen as f16vec4 (H), float (F) and uint (U) through aliased blocks, in four
// regions whose users' lifetimes are apart (barriers between them):
//  A: S's staging (Q hi, Q lo, K hi, K lo of a dim slice); then the tile's P as hi and lo (the
//     softmax writes it) and the softmax's partials (red) past P
//  B: the dim slice's key scales (DKM, S); then the rows' alphas (AM, softmax to O's rescale)
//  C: the scores (ps, S's products to the softmax); then V's staging (P·V); at the end each
//     subgroup's 16 × 16 output scratch
//  D: the rows' running max, sum, alpha and position
const uint QH = 0u, QL = R * SQ, KH = 2u * R * SQ, KL = 3u * R * SQ;   // H, region A
const uint PH = 0u, PL = R * SPP;                                      // H, region A
#ifdef KSCALED
const uint NSA = 3u;   // no K lo
#else
const uint NSA = 4u;
#endif
const uint A_BYTES = max(NSA * R * SQ * 8u, 2u * R * SPP * 8u + NTH * 4u);
const uint RED = 2u * R * SPP * 2u;                                    // F, region A (past P)
#ifdef IDX_SCALES
const uint B_OFF = A_BYTES / 4u, B_BYTES = 4u * (DS / 32u) * BC;       // F: each key's scale, per 32 dims
#else
const uint B_OFF = A_BYTES / 4u, B_BYTES = 4u * max(CM * BC, R * CM);  // F
#endif
const uint C_OFF = B_OFF + B_BYTES / 4u;                               // F
const uint C_BYTES = max(4u * R * PS, max(2u * 16u * SV * 8u, 4u * NSG * CM * CM));
const uint VH = C_OFF / 2u, VL = VH + 16u * SV;                        // H, region C
const uint D_OFF = C_OFF + C_BYTES / 4u;                               // F / U
const uint ROWM = D_OFF, ROWL = D_OFF + R, ROWA = D_OFF + 2u * R, ROWPOS = D_OFF + 3u * R;
const uint SH_BYTES = 4u * D_OFF + 16u * R;
shared SHH { f16vec4 H[SH_BYTES / 8u]; };
shared SHF { float F[SH_BYTES / 4u]; };
shared SHU { uint U[SH_BYTES / 4u]; };
#define ps(i) F[C_OFF + (i)]
#define red(i) F[RED + (i)]
#define rowM(i) F[ROWM + (i)]
#define rowL(i) F[ROWL + (i)]
#define rowA(i) F[ROWA + (i)]
#define rowPos(i) U[ROWPOS + (i)]

// the TPR partial sums of a row from its first thread's slot t, four at a time (attn_tile's order for four)
float rowSum(uint t) {
  float a = (red(t) + red(t + 1u)) + (red(t + 2u) + red(t + 3u));
  [[unroll]] for (uint i = 4u; i < TPR; i += 4u) a += (red(t + i) + red(t + i + 1u)) + (red(t + i + 2u) + red(t + i + 3u));
  return a;
}

// v as hi (11 significant bits, by mask: exact in f16 across its normal range) at element i of the
// staging array and the rest times LO at element i + lo
void put(uint i, uint lo, vec4 v) {
  vec4 h = uintBitsToFloat(floatBitsToUint(v) & 0xFFFFE000u);
  H[i] = f16vec4(h);
  H[i + lo] = f16vec4((v - h) * LO);
}

// elements d … d + 3 of key row `key` from the words k_get4_raw loaded (0 for keys past the tile);
// KEXACT: as exact f16 values and their scale sc
vec4 kValues(uvec4 r, uint key, uint d, bool on, out float sc) {
  sc = 0.0;
#ifdef KEXACT
  return on ? k_get4q_dec(r, key * pc.kRowBytes, d, sc) : vec4(0.0);
#else
  return on ? k_get4_dec(r, key * pc.kRowBytes, d) : vec4(0.0);
#endif
}
// this thread's Q values and K words of dim slice d_ of the tile at kt_ (keys past uEnd: none)
#define QK_LOAD(kt_, d_) { \
  [[unroll]] for (uint e = 0u; e < QE; e++) { \
    qn[e] = qOff != 0xffffffffu ? vec4(QG[qOff + (d_) + 4u * e], QG[qOff + (d_) + 4u * e + 1u], QG[qOff + (d_) + 4u * e + 2u], QG[qOff + (d_) + 4u * e + 3u]) : vec4(0.0); \
    if ((kt_) + sr < uEnd) kr[e] = k_get4_raw(((kt_) + sr) * pc.kRowBytes, kd + (d_) + sd + 4u * e); \
  } \
}
// the words of V rows' elements vd … vd + 4·VE − 1 for this thread's key of slice j0_ (none past the
// tile or the head: PV_STEP stages 0 there)
#define V_LOAD(j0_) { \
  if ((j0_) + vk < nk) [[unroll]] for (uint e = 0u; e < VE; e++) if (vd + 4u * e < hd) vr[e] = v_get4_raw((kt + (j0_) + vk) * pc.vRowBytes, kd + vd + 4u * e); \
}
// P1: P as one f16 (rounded to nearest: 2^-12 of each probability, the one f16 operand of the
// kernel) and two products a fragment pair instead of three (its error: the journal, "2026-12-06")
#ifdef P1
#define PL_LOAD
#define PL_PRODUCT(oi)
#else
#define PL_LOAD coopMatLoad(pal, H, PL + rb * CM * SPP + (j0 + kq) / 4u, SPP, gl_CooperativeMatrixLayoutRowMajor);
#define PL_PRODUCT(oi) o[oi] = coopMatMulAdd(pal, vb, o[oi]);
#endif
// the products of O's pass p (dims p·VD …) for keys j0 … j0 + 15: P from the tile's P, V from the
// staged slice
#define PV_PRODUCTS(p) { \
  [[unroll]] for (uint kq = 0u; kq < 16u; kq += CM) { \
    MA pa, pal, pa1; \
    coopMatLoad(pa, H, PH + rb * CM * SPP + (j0 + kq) / 4u, SPP, gl_CooperativeMatrixLayoutRowMajor); \
    PL_LOAD \
    pa1 = pa * float16_t(LO); \
    [[unroll]] for (uint j = 0u; j < ODB; j++) { \
      uint db = NQ * j + hf; \
      if (p * VD + db * CM < hd) { \
        MB vb, vbl; \
        coopMatLoad(vb, H, VH + kq * SV + (p * VD + db * CM) / 4u, SV, gl_CooperativeMatrixLayoutRowMajor); \
        coopMatLoad(vbl, H, VL + kq * SV + (p * VD + db * CM) / 4u, SV, gl_CooperativeMatrixLayoutRowMajor); \
        o[p * ODB + j] = coopMatMulAdd(pa1, vb, o[p * ODB + j]); \
        o[p * ODB + j] = coopMatMulAdd(pa, vbl, o[p * ODB + j]); \
        PL_PRODUCT(p * ODB + j) \
      } \
    } \
  } \
}
// O += P·V for the keys j0 … j0 + 15: their V (every dim) staged from the words in vr, which then
// take the next slice's, so their latency passes during this one's products
#define PV_STEP { \
  barrier(); \
  [[unroll]] for (uint e = 0u; e < VE; e++) { \
    uint d = vd + 4u * e; \
    bool ok = j0 + vk < nk && d < hd; \
    put(VH + vk * SV + d / 4u, VL - VH, ok ? v_get4_dec(vr[e], (kt + j0 + vk) * pc.vRowBytes, kd + d) : vec4(0.0)); \
  } \
  barrier(); \
  if (j0 + 16u < nk) V_LOAD(j0 + 16u) \
  PV_PRODUCTS(0u) \
  if (passes > 1u) PV_PRODUCTS(1u) \
}

// Ablations (timing only, their outputs mean nothing): ABL_NO_LOADS leaves out the global loads of
// Q, K and V (staging stages what the registers hold); ABL_NO_PV the P·V products; ABL_NO_S S's
// products (scores stay 0). What each leaves out costs about the time it saves.
#ifdef ABL_NO_LOADS
#undef QK_LOAD
#define QK_LOAD(kt_, d_) {}
#undef V_LOAD
#define V_LOAD(j0_) {}
#endif
#ifdef ABL_NO_PV
#undef PV_PRODUCTS
#define PV_PRODUCTS(p) {}
#endif

// accumulator oi's 16 × 16 values (dims p·128 + 16·db …) into the partials P, divided by LO,
// through the subgroup's 256 floats of region C (free once the last tile's P·V is done)
#define O_OUT(oi) { \
  uint d = (oi / ODB) * VD + (NQ * (oi % ODB) + hf) * CM; \
  if (oi < NO && d < hd) { \
    /* o[oi] for oi ≥ NO (NT = 512 writes out only NO): glslang rejects the constant index even where the branch is dead */ \
    coopMatStore(o[oi < NO ? oi : 0u] * (1.0 / LO), F, C_OFF + sg * CM * CM, CM, gl_CooperativeMatrixLayoutRowMajor); \
    subgroupMemoryBarrierShared(); \
    subgroupBarrier(); \
    [[unroll]] for (uint i = 0u; i < PE; i++) { \
      uint e = lane + SG * i, r = rb * CM + e / CM; \
      if (r < rows) P[(((tok0 + r / G) * pc.nHead + kvh * G + r % G) * pc.nBlk + b) * hd + d + e % CM] = ps(sg * CM * CM + e); \
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
    rowM(tid) = -3.0e38;
    rowL(tid) = 0.0;
    rowPos(tid) = tid < rows ? base + tok0 + tid / G : 0u;
  }
  uint sg = gl_SubgroupID, lane = gl_SubgroupInvocationID, rb = sg % RBN, hf = sg / RBN;
  uint passes = (hd + VD - 1u) / VD;
#ifdef IDX_SCALES
  // which element of a CM × CM f32 matrix each of this lane's is (row · CM + column): the layout
  // is the implementation's, the same for every matrix of the type (region C is free until S's first store)
  if (tid < CM * CM) F[C_OFF + tid] = float(tid);
  barrier();
  ACC ix;
  coopMatLoad(ix, F, C_OFF, CM, gl_CooperativeMatrixLayoutRowMajor);
#endif
  ACC o[NO];
  [[unroll]] for (uint j = 0u; j < NO; j++) o[j] = ACC(0.0);
  // what this thread stages: Q row / key sr, dims sd … sd + 4·QE − 1 of each dim slice; V key vk,
  // dims vd … vd + 4·VE − 1 of every key slice (P: the softmax's rows and keys)
  uint sr = tid / TPR, sd = (tid % TPR) * 4u * QE, vk = tid / VPK, vd = (tid % VPK) * 4u * VE;
  uint qOff = sr < rows ? (pc.t0 + tok0 + sr / G) * pc.qStride + (kvh * G + sr % G) * 2u * hd + sd : 0xffffffffu;
  uint kd = kvh * hd;
  // the next dim slice's Q values and K words load into registers while the current one
  // multiplies, the next tile's first during the last slice (the K words decoded when staged:
  // decoding them at the load waited for them)
  vec4 qn[QE];
  uvec4 kr[QE];
  [[unroll]] for (uint e = 0u; e < QE; e++) { kr[e] = uvec4(0u); qn[e] = vec4(0.0); }
  QK_LOAD(u0, 0u)
  for (uint kt = u0; kt < uEnd; kt += BC) {
    uint nk = min(BC, uEnd - kt);
    ACC s[SKB], sl[SKB];
    [[unroll]] for (uint c = 0u; c < SKB; c++) { s[c] = ACC(0.0); sl[c] = s[c]; }
    for (uint d0 = 0u; d0 < hd; d0 += DS) {
      barrier();
      float ksn;
      [[unroll]] for (uint e = 0u; e < QE; e++) {
        put(QH + sr * SQ + sd / 4u + e, QL - QH, qn[e]);
        vec4 kv = kValues(kr[e], kt + sr, kd + d0 + sd + 4u * e, sr < nk, ksn);
#ifdef KEXACT
        H[KH + sr * SQ + sd / 4u + e] = f16vec4(kv);
#else
        put(KH + sr * SQ + sd / 4u + e, KL - KH, kv);
#endif
      }
#ifdef KSCALED
      // the key's scale in CM / TPR of the CM rows (its TPR staging threads share it)
#ifdef IDX_SCALES
      // the key's scale once (its TPR staging threads share it)
      if ((tid % TPR) % (32u / (4u * QE)) == 0u) F[B_OFF + (sd / 32u) * BC + sr] = ksn;
#else
      [[unroll]] for (uint i = 0u; i < CM / TPR; i++) F[B_OFF + ((tid % TPR) * (CM / TPR) + i) * BC + sr] = ksn;
#endif
#endif
      barrier();
      if (d0 + DS < hd) QK_LOAD(kt, d0 + DS)
      else if (kt + BC < uEnd) QK_LOAD(kt + BC, 0u)
#ifdef KSCALED
      // the slice's products before its keys' scales
      [[unroll]] for (uint c = 0u; c < SKB; c++) sl[c] = ACC(0.0);
#endif
#ifndef ABL_NO_S
      [[unroll]] for (uint kk = 0u; kk < DS / 4u; kk += CM / 4u) {
        MA qa, qal;
        coopMatLoad(qa, H, QH + rb * CM * SQ + kk, SQ, gl_CooperativeMatrixLayoutRowMajor);
        coopMatLoad(qal, H, QL + rb * CM * SQ + kk, SQ, gl_CooperativeMatrixLayoutRowMajor);
        [[unroll]] for (uint c = 0u; c < SKB; c++) {
          MB kb, kbl;
          uint kr = (SKB * hf + c) * CM;
          coopMatLoad(kb, H, KH + kr * SQ + kk, SQ, gl_CooperativeMatrixLayoutColumnMajor);
#if defined(KSCALED)
          // integers / LO stay exact in f16, so Q's lo part shares the accumulator
          kbl = kb * float16_t(1.0 / LO);
          sl[c] = coopMatMulAdd(qa, kb, sl[c]);
          sl[c] = coopMatMulAdd(qal, kbl, sl[c]);
#elif defined(KEXACT)
          s[c] = coopMatMulAdd(qa, kb, s[c]);
          sl[c] = coopMatMulAdd(qal, kb, sl[c]);
#else
          coopMatLoad(kbl, H, KL + kr * SQ + kk, SQ, gl_CooperativeMatrixLayoutColumnMajor);
          s[c] = coopMatMulAdd(qa, kb, s[c]);
          sl[c] = coopMatMulAdd(qal, kb, sl[c]);
          sl[c] = coopMatMulAdd(qa, kbl, sl[c]);
#endif
        }
#if defined(KSCALED) && defined(IDX_SCALES)
        // a 32-dim scale group's end: each element times its key's scale (ix says which key, its
        // column, an element is), into S
        if ((kk * 4u + CM) % 32u == 0u) [[unroll]] for (uint c = 0u; c < SKB; c++) {
          uint g = (kk * 4u) / 32u;
          for (int i = 0; i < sl[c].length(); i++) s[c][i] += sl[c][i] * F[B_OFF + g * BC + (SKB * hf + c) * CM + uint(ix[i]) % CM];
          sl[c] = ACC(0.0);
        }
#endif
      }
#endif
#if defined(KSCALED) && !defined(IDX_SCALES)
      [[unroll]] for (uint c = 0u; c < SKB; c++) {
        ACC dm;
        coopMatLoad(dm, F, B_OFF + (SKB * hf + c) * CM, BC, gl_CooperativeMatrixLayoutRowMajor);
        s[c] = s[c] + sl[c] * dm;
      }
#endif
    }
    [[unroll]] for (uint c = 0u; c < SKB; c++) {
#ifdef KSCALED
      s[c] = s[c] * pc.scale;
#else
      s[c] = (s[c] + sl[c] * (1.0 / LO)) * pc.scale;
#endif
      coopMatStore(s[c], F, C_OFF + rb * CM * PS + (SKB * hf + c) * CM, PS, gl_CooperativeMatrixLayoutRowMajor);
    }
    // the tile's first V words, in flight during the softmax
    uvec4 vr[VE];
    [[unroll]] for (uint e = 0u; e < VE; e++) vr[e] = uvec4(0u);
    V_LOAD(0u)
    barrier();
    // online softmax (attn_tile's), TPR threads per row (KPT keys each): keys past the row's
    // position (or the tile) count as −∞
    {
      uint r = tid / TPR, j0 = (tid % TPR) * KPT;
      uint lim = r < rows ? min(nk, rowPos(r) + 1u - min(rowPos(r) + 1u, kt)) : 0u;
      float mOld = rowM(r), m = mOld;
      for (uint j = j0; j < min(lim, j0 + KPT); j++) m = max(m, ps(r * PS + j));
      red(tid) = m;
      barrier();
      m = red(r * TPR);
      [[unroll]] for (uint i = 1u; i < TPR; i++) m = max(m, red(r * TPR + i));
      // the probabilities straight into the tile's P as hi and lo (region A: S's staging is done)
      float l = 0.0;
      [[unroll]] for (uint j = j0; j < j0 + KPT; j += 4u) {
        vec4 e4;
        [[unroll]] for (uint i = 0u; i < 4u; i++) {
          float e = j + i < lim ? exp(ps(r * PS + j + i) - m) : 0.0;
          e4[i] = e;
          l += e;
        }
#ifdef P1
        H[PH + r * SPP + j / 4u] = f16vec4(e4);
#else
        put(PH + r * SPP + j / 4u, PL - PH, e4);
#endif
      }
      barrier();
      red(tid) = l;
      barrier();
      // the row's alpha CM times, CM / TPR a thread, for O's rescale below (written before the
      // barrier: the subgroups read it without one of their own)
#ifndef IDX_SCALES
      [[unroll]] for (uint i = 0u; i < CM / TPR; i++) F[B_OFF + r * CM + (tid % TPR) * (CM / TPR) + i] = exp(mOld - m);
#endif
      if (tid % TPR == 0u) {
        float alpha = exp(mOld - m);
        rowL(r) = rowL(r) * alpha + rowSum(tid);
        rowM(r) = m;
        rowA(r) = alpha;
      }
      barrier();
    }
    // O's rows times their alpha where one of the subgroup's rows' maximum grew (the first
    // tile's O is still 0): a cooperative matrix's rows cannot be scaled one by one, so O is
    // multiplied elementwise by the CM × CM matrix of its rows' alphas the softmax wrote (no
    // subgroup barrier inside this branch: lavapipe summed wrong with them there, docs/toolchain.md)
    if (kt != u0 && subgroupAny(rowA(rb * CM + lane % CM) != 1.0)) {
#ifdef IDX_SCALES
      for (int i = 0; i < o[0].length(); i++) {
        float al = rowA(rb * CM + uint(ix[i]) / CM);
        [[unroll]] for (uint j = 0u; j < NO; j++) o[j][i] *= al;
      }
#else
      ACC am;
      coopMatLoad(am, F, B_OFF + rb * CM * CM, CM, gl_CooperativeMatrixLayoutRowMajor);
      [[unroll]] for (uint j = 0u; j < NO; j++) o[j] = o[j] * am;
#endif
    }
    // O += P·V, 16 keys at a time (keys past the tile: P = 0 and V staged as 0, never garbage);
    // the two passes written out (PV_PRODUCTS), so every accumulator has a constant index (an array
    // of cooperative matrices indexed at run time stays an array in memory)
    for (uint j0 = 0u; j0 < nk; j0 += 16u) PV_STEP
  }
  // the partials: O / LO through each subgroup's scratch, rows as attn_tile writes them
  barrier();
  O_OUT(0u) O_OUT(1u) O_OUT(2u) O_OUT(3u) O_OUT(4u) O_OUT(5u) O_OUT(6u) O_OUT(7u)
  if (tid < rows) {
    uint slot = ((tok0 + tid / G) * pc.nHead + kvh * G + tid % G) * pc.nBlk + b;
    ML[slot] = vec2(rowM(tid), rowL(tid));
  }
}
