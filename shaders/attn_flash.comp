#version 450
// attn_flash: attention of the G = nHead/nHeadKv query heads of one KV head over one block of key
// positions, in a single pass (flash-decoding): scores s_u = q_h·k_u/√hd for u ∈ [u0, u1)
// (causal: u ≤ pos + t), each head's block max m and l = Σ e^(s_u − m), and P = Σ e^(s_u − m) v_u;
// attn_merge combines the blocks. One workgroup per KV head, not per query head: each K and V
// element is decoded once for all G heads sharing it (GQA), instead of G times.
// Thread mapping: scores: a subgroup takes PP positions at a time (lanes over dimensions: a K row
// is read as coalesced lines; G partial dots per lane and position, subgroupAdd each); softmax:
// one subgroup per head (no barriers); values: one thread per dimension (V rows read as coalesced
// lines), G sums each, VP positions per trip. Each sum keeps the order of one position at a time.
// Shared memory: the G query rows and the G·blk scores (≤ 2048 floats each: G ≤ 8, G·hd ≤ 2048,
// G·blk ≤ 2048, checked by the engine). Blocks: 64 positions for one token (a short context still
// spreads over many workgroups), up to 512 for prefill (bounds the partials).
// Dispatch: (tokens, nHeadKv, ⌈ctx / blk⌉) for the chunk's tokens t0 … (prefill runs a long chunk
// as several such dispatches, so the partials stay the size of one). Variant per K × V cache type.
#extension GL_GOOGLE_include_directive : enable
#extension GL_KHR_shader_subgroup_arithmetic : enable
#include "common.glsl"
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer QB { float QG[]; };
layout(std430, binding = 1) readonly buffer KB { uint KC[]; };
layout(std430, binding = 2) readonly buffer VB { uint VC[]; };
layout(std430, binding = 3) writeonly buffer PPB { float P[]; };
layout(std430, binding = 4) writeonly buffer MLB { vec2 ML[]; };
layout(std430, binding = 5) readonly buffer PB { uint PARAMS[]; };
layout(push_constant) uniform PC {
  uint nHead; uint nHeadKv; uint hd; uint kRowBytes;
  uint vRowBytes; uint qStride; float scale; uint nBlk;
  uint blk; uint t0; uint pad1; uint pad2;
} pc;
#define KV_FN k_get
#define KVBUF KC
#define KV_T KT
#include "kv.glsl"
#undef KV_FN
#undef KVBUF
#undef KV_T
#define KV_FN v_get
#define KVBUF VC
#define KV_T VT
#include "kv.glsl"
const uint MAXG = 8u;
// positions per subgroup pass (scores), positions per trip (values)
const uint PP = 4u, VP = 16u;
shared float q[2048];
shared float sc[2048];

void main() {
  uint tl = gl_WorkGroupID.x, t = pc.t0 + tl, kvh = gl_WorkGroupID.y, b = gl_WorkGroupID.z, tid = gl_LocalInvocationID.x;
  uint G = pc.nHead / pc.nHeadKv, hd = pc.hd;
  uint p = PARAMS[0] + t;
  uint u0 = b * pc.blk;
  if (u0 > p) return;  // the whole block is in the future (attn_merge skips it)
  uint n = min(p + 1u, u0 + pc.blk) - u0;
  uint ko = kvh * hd;
  for (uint i = tid; i < G * hd; i += 256u) q[i] = QG[t * pc.qStride + (kvh * G + i / hd) * 2u * hd + i % hd];
  barrier();
  // PP positions per subgroup pass, their K loads issued together (one position at a time, a
  // 64-position block was 16 dependent load rounds per subgroup: the whole kernel at 2K, where
  // the dispatch is 64 workgroups)
  uint d0 = gl_SubgroupInvocationID, S = gl_SubgroupSize;
  for (uint i0 = gl_SubgroupID * PP; i0 < n; i0 += gl_NumSubgroups * PP) {
    float s[PP][MAXG];
    uint ro[PP];
    [[unroll]] for (uint pp = 0u; pp < PP; pp++) {
      // positions past n read row n − 1 again (in the cache) and are not stored
      ro[pp] = (u0 + min(i0 + pp, n - 1u)) * pc.kRowBytes;
      [[unroll]] for (uint g = 0u; g < MAXG; g++) s[pp][g] = 0.0;
    }
    // 4 K elements per position per trip (hd / subgroup size is a multiple of 4: 256/32,
    // 256/64, 64/8 …; the tail loop covers the rest)
    uint d = d0;
    for (; d + 3u * S < hd; d += 4u * S) {
      float k[PP][4];
      [[unroll]] for (uint pp = 0u; pp < PP; pp++) [[unroll]] for (uint j = 0u; j < 4u; j++) k[pp][j] = k_get(ro[pp], ko + d + j * S);
      [[unroll]] for (uint j = 0u; j < 4u; j++) [[unroll]] for (uint g = 0u; g < MAXG; g++) if (g < G) {
        float qv = q[g * hd + d + j * S];
        [[unroll]] for (uint pp = 0u; pp < PP; pp++) s[pp][g] += qv * k[pp][j];
      }
    }
    for (; d < hd; d += S) {
      float k[PP];
      [[unroll]] for (uint pp = 0u; pp < PP; pp++) k[pp] = k_get(ro[pp], ko + d);
      [[unroll]] for (uint g = 0u; g < MAXG; g++) if (g < G) {
        float qv = q[g * hd + d];
        [[unroll]] for (uint pp = 0u; pp < PP; pp++) s[pp][g] += qv * k[pp];
      }
    }
    [[unroll]] for (uint pp = 0u; pp < PP; pp++) [[unroll]] for (uint g = 0u; g < MAXG; g++) if (g < G) {
      float v = subgroupAdd(s[pp][g]);
      if (subgroupElect() && i0 + pp < n) sc[g * pc.blk + i0 + pp] = v * pc.scale;
    }
  }
  barrier();
  // each head's max, e^(s − m) in place and their sum: one subgroup per head
  uint slot0 = (tl * pc.nHead + kvh * G) * pc.nBlk + b;
  for (uint g = gl_SubgroupID; g < G; g += gl_NumSubgroups) {
    float m = -3.0e38;
    for (uint i = gl_SubgroupInvocationID; i < n; i += gl_SubgroupSize) m = max(m, sc[g * pc.blk + i]);
    m = subgroupMax(m);
    float l = 0.0;
    for (uint i = gl_SubgroupInvocationID; i < n; i += gl_SubgroupSize) { float e = exp(sc[g * pc.blk + i] - m); sc[g * pc.blk + i] = e; l += e; }
    l = subgroupAdd(l);
    if (subgroupElect()) ML[slot0 + g * pc.nBlk] = vec2(m, l);
  }
  barrier();
  if (tid < hd) {
    float o[MAXG];
    [[unroll]] for (uint g = 0u; g < MAXG; g++) o[g] = 0.0;
    // VP positions per trip: their V loads are issued together (one at a time, the loop waited
    // out a memory latency per position)
    uint i = 0u;
    for (; i + VP <= n; i += VP) {
      float v[VP];
      [[unroll]] for (uint j = 0u; j < VP; j++) v[j] = v_get((u0 + i + j) * pc.vRowBytes, ko + tid);
      [[unroll]] for (uint j = 0u; j < VP; j++) [[unroll]] for (uint g = 0u; g < MAXG; g++) if (g < G) o[g] += sc[g * pc.blk + i + j] * v[j];
    }
    for (; i < n; i++) {
      float v = v_get((u0 + i) * pc.vRowBytes, ko + tid);
      [[unroll]] for (uint g = 0u; g < MAXG; g++) if (g < G) o[g] += sc[g * pc.blk + i] * v;
    }
    [[unroll]] for (uint g = 0u; g < MAXG; g++) if (g < G) P[(slot0 + g * pc.nBlk) * hd + tid] = o[g];
  }
}
