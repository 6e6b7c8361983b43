#version 450
// attn_flash: attention of the G = nHead/nHeadKv query heads of one KV head over one block of key
// positions, in a single pass (flash-decoding): scores s_u = q_h·k_u/√hd for u ∈ [u0, u1)
// (causal: u ≤ pos + t), each head's block max m and l = Σ e^(s_u − m), and P = Σ e^(s_u − m) v_u;
// attn_merge combines the blocks. One workgroup per KV head, not per query head: each K and V
// element is decoded once for all G heads sharing it (GQA), instead of G times.
//
// A decode step runs this ten times on its critical path, one block of 64 positions per
// workgroup, so what counts is one workgroup's chain of memory round trips and the shared-memory
// instructions per position (the H200 profile of 2026-12-02: 37 µs a call at 2K, 116 µs at 32K).
// Hence:
// - scores: 8 lanes per position, each over hd/8 consecutive dimensions, 4 elements a load
//   (k_get4), the G heads' query values read as two vec4 (heads 0-3, 4-7; missing heads are
//   zero) broadcast to the lanes of the other positions; the 8 lanes' sums meet by three
//   shuffle-xor steps (8 lanes are consecutive invocations: subgroups hold ≥ 8, the engine's
//   limit). 32 positions a pass, where one subgroup per position took 8 passes of 8 reductions.
// - values: a thread per (dimension pair, position group), positions strided over the groups,
//   two dimensions a load (v_get2), the heads' weights as two broadcast vec4; the groups' sums
//   meet in shared memory in a fixed order.
// - blocks of 64 positions to a 4K context, longer beyond (attn_span.glsl: per-block costs paid
//   fewer times where there are blocks enough).
// Scores are stored [position][8 heads] (2 vec4); the softmax (one subgroup per head) turns
// them into weights in place. Shared memory: the query rows (≤ 2048 values + padding) and the
// scores (blk × 8 heads ≤ 4096 values: blk ≤ 512), reused for
// the position groups' partial sums.
// Dispatch: (tokens, nHeadKv, ⌈ctx / blk⌉) for the chunk's tokens t0 … (prefill runs a long chunk
// as several such dispatches, so the partials stay the size of one); attn_flash_rows: (rows,
// nHeadKv, ⌈ctx / blk⌉) (rows.glsl). Variant per K × V cache type. hd a multiple of 32, ≤ 256.
#extension GL_GOOGLE_include_directive : enable
#extension GL_KHR_shader_subgroup_arithmetic : enable
#extension GL_KHR_shader_subgroup_shuffle : enable
#include "common.glsl"
#include "rows.glsl"
#include "attn_span.glsl"
layout(local_size_x = 256) in;
#define ROW ROW_AT(gl_WorkGroupID.x)
layout(std430, binding = 0) readonly buffer QB { float QG[]; };
layout(std430, binding = 1) readonly buffer KB { uint KC_[]; } kb_r[BATCH];
#define KC kb_r[ROW].KC_
layout(std430, binding = 2) readonly buffer VB { uint VC_[]; } vb_r[BATCH];
#define VC vb_r[ROW].VC_
layout(std430, binding = 3) writeonly buffer PPB { float P[]; };
layout(std430, binding = 4) writeonly buffer MLB { vec2 ML[]; };
layout(std430, binding = 5) readonly buffer PB { uint PARAMS_[]; } pb_r[BATCH];
#define PARAMS pb_r[ROW].PARAMS_
layout(push_constant) uniform PC {
  uint nHead; uint nHeadKv; uint hd; uint kRowBytes;
  uint vRowBytes; uint qStride; float scale; uint nBlk;
  uint blk; uint t0; uint grow; uint pad2;
} pc;
#define KV_FN4 k_get4
#define KVBUF KC
#define KV_T KT
#include "kv.glsl"
#undef KV_FN4
#undef KVBUF
#undef KV_T
#define KV_FN2 v_get2
#define KVBUF VC
#define KV_T VT
#include "kv.glsl"
const uint NT = 256u, TPP = 8u, PASS = NT / TPP, VU = 8u;
// query rows: slice c (dims c·W … c·W + W − 1) at qv[c·QS + 2e + half], QS = 2W + 1 (the odd
// stride puts the 8 slices read together on distinct banks)
shared vec4 qv[TPP * 65u];
// scores then weights, [position][heads 0-3 | 4-7] (blk ≤ 512); afterwards the position groups' sums
shared vec4 scv[1024];

void main() {
  uint tl = gl_WorkGroupID.x, t = pc.t0 + tl, kvh = gl_WorkGroupID.y, b = gl_WorkGroupID.z, tid = gl_LocalInvocationID.x;
  uint G = pc.nHead / pc.nHeadKv, hd = pc.hd;
  uint p = POS(t);
  uint blk = attnSpan(p, pc.blk, pc.grow), u0 = b * blk;
  if (u0 > p) return;  // the whole block is in the future (attn_merge skips it)
  uint n = min(p + 1u, u0 + blk) - u0;
  uint ko = kvh * hd, W = hd / TPP, QS = 2u * W + 1u;
  for (uint i = tid; i < 8u * hd; i += NT) {
    uint g = i / hd, d = i % hd;
    float v = g < G ? QG[t * pc.qStride + (kvh * G + g) * 2u * hd + d] : 0.0;
    qv[(d / W) * QS + 2u * (d % W) + g / 4u][g % 4u] = v;
  }
  barrier();
  // scores: lane c of position i over dims c·W …, 4 at a time (register arrays indexed only by
  // unrolled constants: W ≤ 32, a multiple of 4)
  uint c = tid % TPP, pi = tid / TPP, d0 = ko + c * W, qb = c * QS;
  // two positions a lane (i, i + PASS): each query read serves both; K in two halves of its dims
  for (uint i0 = 0u; i0 < n; i0 += 2u * PASS) {
    uint ia = i0 + pi, ib = ia + PASS;
    bool ona = ia < n, onb = ib < n;
    vec4 sa0 = vec4(0.0), sa1 = vec4(0.0), sb0 = vec4(0.0), sb1 = vec4(0.0);
    if (ona) {
      [[unroll]] for (uint h = 0u; h < 2u; h++) {
        vec4 ka[4], kb[4];
        [[unroll]] for (uint e = 0u; e < 4u; e++) {
          uint e4 = 4u * h + e;
          ka[e] = vec4(0.0); kb[e] = vec4(0.0);
          if (4u * e4 < W) {
            ka[e] = k_get4((u0 + ia) * pc.kRowBytes, d0 + 4u * e4);
            if (onb) kb[e] = k_get4((u0 + ib) * pc.kRowBytes, d0 + 4u * e4);
          }
        }
        [[unroll]] for (uint e = 0u; e < 4u; e++) if (4u * (4u * h + e) < W) {
          uint e4 = 4u * h + e;
          [[unroll]] for (uint j = 0u; j < 4u; j++) {
            vec4 q0 = qv[qb + 8u * e4 + 2u * j], q1 = qv[qb + 8u * e4 + 2u * j + 1u];
            sa0 += q0 * ka[e][j]; sa1 += q1 * ka[e][j];
            sb0 += q0 * kb[e][j]; sb1 += q1 * kb[e][j];
          }
        }
      }
    }
    [[unroll]] for (uint m = 1u; m < TPP; m <<= 1) {
      sa0 += subgroupShuffleXor(sa0, m); sa1 += subgroupShuffleXor(sa1, m);
      sb0 += subgroupShuffleXor(sb0, m); sb1 += subgroupShuffleXor(sb1, m);
    }
    if (c == 0u) {
      if (ona) { scv[2u * ia] = sa0 * pc.scale; scv[2u * ia + 1u] = sa1 * pc.scale; }
      if (onb) { scv[2u * ib] = sb0 * pc.scale; scv[2u * ib + 1u] = sb1 * pc.scale; }
    }
  }
  barrier();
  // each head's max, e^(s − m) in place and their sum: one subgroup per head
  uint slot0 = (tl * pc.nHead + kvh * G) * pc.nBlk + b;
  for (uint g = gl_SubgroupID; g < G; g += gl_NumSubgroups) {
    uint h4 = g / 4u, c4 = g % 4u;
    float m = -3.0e38;
    for (uint i = gl_SubgroupInvocationID; i < n; i += gl_SubgroupSize) m = max(m, scv[2u * i + h4][c4]);
    m = subgroupMax(m);
    float l = 0.0;
    for (uint i = gl_SubgroupInvocationID; i < n; i += gl_SubgroupSize) { float e = exp(scv[2u * i + h4][c4] - m); scv[2u * i + h4][c4] = e; l += e; }
    l = subgroupAdd(l);
    if (subgroupElect()) ML[slot0 + g * pc.nBlk] = vec2(m, l);
  }
  barrier();
  // values: thread (dimension pair j, position group pg) sums o[dim 2j | 2j+1][heads 0-3 | 4-7]
  // over positions pg, pg + NPG, …, VU of them a trip (their loads issued together)
  uint hp = hd / 2u, NPG = NT / hp, j = tid % hp, pg = tid / hp;
  bool von = pg < NPG;
  vec4 a0 = vec4(0.0), a1 = vec4(0.0), b0 = vec4(0.0), b1 = vec4(0.0);
  if (von) {
    uint i = pg;
    for (; i + (VU - 1u) * NPG < n; i += VU * NPG) {
      vec2 v[VU];
      [[unroll]] for (uint k = 0u; k < VU; k++) v[k] = v_get2((u0 + i + k * NPG) * pc.vRowBytes, ko + 2u * j);
      [[unroll]] for (uint k = 0u; k < VU; k++) {
        uint ik = i + k * NPG;
        vec4 w0 = scv[2u * ik], w1 = scv[2u * ik + 1u];
        a0 += w0 * v[k].x; a1 += w1 * v[k].x; b0 += w0 * v[k].y; b1 += w1 * v[k].y;
      }
    }
    for (; i < n; i += NPG) {
      vec2 v = v_get2((u0 + i) * pc.vRowBytes, ko + 2u * j);
      vec4 w0 = scv[2u * i], w1 = scv[2u * i + 1u];
      a0 += w0 * v.x; a1 += w1 * v.x; b0 += w0 * v.y; b1 += w1 * v.y;
    }
  }
  barrier();
  // the groups' sums, [group][dim][heads 0-3 | 4-7] (NPG · hd · 2 ≤ 1024 vec4), added in group order
  if (von) {
    uint o = (pg * hd + 2u * j) * 2u;
    scv[o] = a0; scv[o + 1u] = a1; scv[o + 2u] = b0; scv[o + 3u] = b1;
  }
  barrier();
  for (uint i = tid; i < G * hd; i += NT) {
    uint g = i / hd, d = i % hd;
    float s = 0.0;
    for (uint q = 0u; q < NPG; q++) s += scv[(q * hd + d) * 2u + g / 4u][g % 4u];
    P[(slot0 + g * pc.nBlk) * hd + d] = s;
  }
}
