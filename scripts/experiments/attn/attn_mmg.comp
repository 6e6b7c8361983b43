#version 450
// attn_mmg (#44 experiment): attn_mmc's arithmetic with no staging of Q, K or V. Q is split once (hi
// and lo f16), K decoded once (q8_0's integers as f16 and one f32 scale per key and 32 dims) and V
// decoded once (hi and lo f16), into buffers laid out so that every subgroup loads its fragments
// straight from memory: S needs no barrier but the one that shares the tile's key scales, P·V none.
// The softmax, the P the softmax writes as two f16 into shared memory, and the outputs are
// attn_mmc's. Same dispatch, push block and bindings as attn_mmc, the buffers standing for the
// decoded forms (bench-attn-tile builds them for kernels named attn_mmg*):
//   binding 0 (Q): f16 hi of row (kvh, token t, query head g of the KV head) at half
//     ((kvh·nTok + t)·G + g)·hd + d, R rows of padding, then the lo halves (times LO) the same way
//   binding 1 (K): f16 integers of (position, kvh·hd + d) at half pos·kvDim + kvh·hd + d; the f32
//     scales from word kRowBytes (the push field reused): pos·kvDim/32 + (kvh·hd + d)/32
//   binding 2 (V): f16 hi at half pos·kvDim + kvh·hd + d; lo (times LO) from word vRowBytes
// Every position a tile can touch (the tile's 64 keys from its first) must hold finite values:
// keys past a row's position get P = 0, and 0 times a NaN is a NaN.
// q8_0 K only (KT = 2), hd = 256 (HDC: the S loop unrolled), 512 threads; CM = 16 and SG = 32 (the
// engine's shape) or CM = 8 and SG = 8 (lavapipe's, for checks).
#extension GL_GOOGLE_include_directive : enable
#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_vote : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#include "common.glsl"
#ifndef NT
#define NT 512
#endif
#ifndef HDC
#define HDC 256u
#endif
layout(local_size_x = NT) in;
layout(std430, binding = 0) readonly buffer QB { uint QD[]; };
layout(std430, binding = 1) readonly buffer KB { uint KD[]; };
layout(std430, binding = 2) readonly buffer VB { uint VD2[]; };
layout(std430, binding = 1) readonly buffer KBF { float KDF[]; };
layout(std430, binding = 3) writeonly buffer PPB { float P[]; };
layout(std430, binding = 4) writeonly buffer MLB { vec2 ML[]; };
layout(std430, binding = 5) readonly buffer PB { uint PARAMS[]; };
layout(push_constant) uniform PC {
  uint nHead; uint nHeadKv; uint hd; uint kRowBytes;
  uint vRowBytes; uint qStride; float scale; uint nBlk;
  uint blk; uint t0; uint nTok; uint tq;
} pc;
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
const uint VD = 128u;  // dims per O pass (an accumulator set)
const uint PS = BC + 4u;
const float LO = 2048.0;
const uint NTH = uint(NT), NSG = NTH / SG, RBN = R / CM, NQ = NSG / RBN, SKB = (BC / CM) / NQ, ODB = (VD / CM) / NQ, PE = CM * CM / SG;
const uint TPR = NTH / R, KPT = BC / TPR, NO = 2u * ODB, NG = HDC / 32u;
const uint SPP = (BC + 8u) / 4u;   // a P row of the tile (all its keys), f16vec4
shared f16vec4 PT[2u * R * SPP];   // the tile's P: hi rows, then lo rows (times LO)
shared float ps[R * PS];          // scores; at the end each subgroup's 16 × 16 output scratch
shared float DKS[NG * BC];        // the tile's key scales, [32-dim group][key]
shared float red[NTH];
shared float rowM[R];
shared float rowL[R];
shared float rowA[R];
shared uint rowPos[R];

float rowSum(uint t) {
  float a = (red[t] + red[t + 1u]) + (red[t + 2u] + red[t + 3u]);
  [[unroll]] for (uint i = 4u; i < TPR; i += 4u) a += (red[t + i] + red[t + i + 1u]) + (red[t + i + 2u] + red[t + i + 3u]);
  return a;
}

#define O_OUT(oi) { \
  uint d = (oi / ODB) * VD + (NQ * (oi % ODB) + hf) * CM; \
  if (oi < NO && d < hd) { \
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
  uint G = pc.nHead / pc.nHeadKv, hd = HDC, tq = pc.tq;
  uint tok0 = tile * tq;
  uint ntk = min(tq, pc.nTok - tok0);
  uint base = PARAMS[0] + pc.t0;
  uint u0 = b * pc.blk;
  uint pLast = base + tok0 + ntk - 1u;
  if (u0 > pLast) return;
  uint uEnd = min(u0 + pc.blk, pLast + 1u);
  uint rows = ntk * G;
  if (tid < R) {
    rowM[tid] = -3.0e38;
    rowL[tid] = 0.0;
    rowPos[tid] = tid < rows ? base + tok0 + tid / G : 0u;
  }
  uint sg = gl_SubgroupID, lane = gl_SubgroupInvocationID, rb = sg % RBN, hf = sg / RBN;
  uint kvDim = pc.nHeadKv * hd;
  if (tid < CM * CM) ps[tid] = float(tid);
  barrier();
  ACC ix;
  coopMatLoad(ix, ps, 0u, CM, gl_CooperativeMatrixLayoutRowMajor);
  ACC o[NO];
  [[unroll]] for (uint j = 0u; j < NO; j++) o[j] = ACC(0.0);
  // this subgroup's 16 query rows: Q's hi and lo rows (in words: two halves a word); rows of a
  // partial tile past the tokens read the next KV head's rows, or the R rows of padding past the
  // hi and the lo rows, which the outputs drop
  uint qRow = (kvh * pc.nTok + tok0) * G + rb * CM;
  uint qHi = qRow * hd / 2u, qLo = (pc.nTok * pc.nHead + R) * hd / 2u + qHi;
  for (uint kt = u0; kt < uEnd; kt += BC) {
    uint nk = min(BC, uEnd - kt);
    // the tile's key scales (the previous tile's last readers are past the barrier that ended its softmax)
    DKS[(tid / BC) * BC + tid % BC] = KDF[pc.kRowBytes + (kt + tid % BC) * (kvDim / 32u) + (kvh * hd) / 32u + tid / BC];
    barrier();
    // S for this subgroup's rows and key blocks, straight from the decoded buffers
    ACC s[SKB];
    [[unroll]] for (uint c = 0u; c < SKB; c++) s[c] = ACC(0.0);
    [[unroll]] for (uint g = 0u; g < NG; g++) {
      ACC sl[SKB];
      [[unroll]] for (uint c = 0u; c < SKB; c++) sl[c] = ACC(0.0);
      [[unroll]] for (uint h = 0u; h < 32u / CM; h++) {
        uint d0 = g * 32u + h * CM;
        MA qa, qal;
        coopMatLoad(qa, QD, qHi + d0 / 2u, hd / 2u, gl_CooperativeMatrixLayoutRowMajor);
        coopMatLoad(qal, QD, qLo + d0 / 2u, hd / 2u, gl_CooperativeMatrixLayoutRowMajor);
        [[unroll]] for (uint c = 0u; c < SKB; c++) {
          MB kb, kbl;
          uint key = kt + (SKB * hf + c) * CM;
          coopMatLoad(kb, KD, (key * kvDim + kvh * hd + d0) / 2u, kvDim / 2u, gl_CooperativeMatrixLayoutColumnMajor);
          kbl = kb * float16_t(1.0 / LO);
          sl[c] = coopMatMulAdd(qa, kb, sl[c]);
          sl[c] = coopMatMulAdd(qal, kbl, sl[c]);
        }
      }
      [[unroll]] for (uint c = 0u; c < SKB; c++)
        for (int i = 0; i < sl[c].length(); i++) s[c][i] += sl[c][i] * DKS[g * BC + (SKB * hf + c) * CM + uint(ix[i]) % CM];
    }
    [[unroll]] for (uint c = 0u; c < SKB; c++) {
      s[c] = s[c] * pc.scale;
      coopMatStore(s[c], ps, rb * CM * PS + (SKB * hf + c) * CM, PS, gl_CooperativeMatrixLayoutRowMajor);
    }
    barrier();
    // online softmax (attn_mmc's), the probabilities written as P's two f16 halves
    {
      uint r = tid / TPR, j0 = (tid % TPR) * KPT;
      uint lim = r < rows ? min(nk, rowPos[r] + 1u - min(rowPos[r] + 1u, kt)) : 0u;
      float mOld = rowM[r], m = mOld;
      for (uint j = j0; j < min(lim, j0 + KPT); j++) m = max(m, ps[r * PS + j]);
      red[tid] = m;
      barrier();
      m = red[r * TPR];
      [[unroll]] for (uint i = 1u; i < TPR; i++) m = max(m, red[r * TPR + i]);
      float l = 0.0;
      [[unroll]] for (uint j = j0; j < j0 + KPT; j += 4u) {
        vec4 e4;
        [[unroll]] for (uint i = 0u; i < 4u; i++) {
          float e = j + i < lim ? exp(ps[r * PS + j + i] - m) : 0.0;
          e4[i] = e;
          l += e;
        }
        vec4 h4 = uintBitsToFloat(floatBitsToUint(e4) & 0xFFFFE000u);
        PT[r * SPP + j / 4u] = f16vec4(h4);
        PT[R * SPP + r * SPP + j / 4u] = f16vec4((e4 - h4) * LO);
      }
      barrier();
      red[tid] = l;
      barrier();
      if (tid % TPR == 0u) {
        float alpha = exp(mOld - m);
        rowL[r] = rowL[r] * alpha + rowSum(tid);
        rowM[r] = m;
        rowA[r] = alpha;
      }
      barrier();
    }
    if (kt != u0 && subgroupAny(rowA[rb * CM + lane % CM] != 1.0)) {
      for (int i = 0; i < o[0].length(); i++) {
        float al = rowA[rb * CM + uint(ix[i]) / CM];
        [[unroll]] for (uint j = 0u; j < NO; j++) o[j][i] *= al;
      }
    }
    // O += P·V, CM keys at a time, V's fragments straight from the decoded buffer
    for (uint j0 = 0u; j0 < nk; j0 += CM) {
      MA pa, pal, pa1;
      coopMatLoad(pa, PT, rb * CM * SPP + j0 / 4u, SPP, gl_CooperativeMatrixLayoutRowMajor);
      coopMatLoad(pal, PT, R * SPP + rb * CM * SPP + j0 / 4u, SPP, gl_CooperativeMatrixLayoutRowMajor);
      pa1 = pa * float16_t(LO);
      uint vo = ((kt + j0) * kvDim + kvh * hd) / 2u;
      [[unroll]] for (uint p = 0u; p < 2u; p++) [[unroll]] for (uint j = 0u; j < ODB; j++) {
        uint d = p * VD + (NQ * j + hf) * CM;
        MB vb, vbl;
        coopMatLoad(vb, VD2, vo + d / 2u, kvDim / 2u, gl_CooperativeMatrixLayoutRowMajor);
        coopMatLoad(vbl, VD2, pc.vRowBytes + vo + d / 2u, kvDim / 2u, gl_CooperativeMatrixLayoutRowMajor);
        o[p * ODB + j] = coopMatMulAdd(pa1, vb, o[p * ODB + j]);
        o[p * ODB + j] = coopMatMulAdd(pa, vbl, o[p * ODB + j]);
        o[p * ODB + j] = coopMatMulAdd(pal, vb, o[p * ODB + j]);
      }
    }
    // P and the scales are read again only after the next tile's first barrier
  }
  barrier();
  O_OUT(0u) O_OUT(1u) O_OUT(2u) O_OUT(3u) O_OUT(4u) O_OUT(5u) O_OUT(6u) O_OUT(7u)
  if (tid < rows) {
    uint slot = ((tok0 + tid / G) * pc.nHead + kvh * G + tid % G) * pc.nBlk + b;
    ML[slot] = vec2(rowM[tid], rowL[tid]);
  }
}
