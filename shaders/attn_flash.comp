#version 450
// attn_flash: attention of the G = nHead/nHeadKv query heads of one KV head over one block of key
// positions, in a single pass (flash-decoding): scores s_u = q_h·k_u/√hd for u ∈ [u0, u1)
// (causal: u ≤ pos + t), each head's block max m and l = Σ e^(s_u − m), and P = Σ e^(s_u − m) v_u;
// attn_merge combines the blocks. One workgroup per KV head, not per query head: each K and V
// element is decoded once for all G heads sharing it (GQA), instead of G times.
// Thread mapping: scores: one subgroup per position (lanes over dimensions: a K row is read as
// coalesced lines; G partial dots per lane, subgroupAdd each); softmax: one subgroup per head
// (no barriers); values: one thread per dimension (V rows read as coalesced lines), G sums each.
// Shared memory: the G query rows and the G·blk scores (≤ 2048 floats each: G ≤ 8, G·hd ≤ 2048,
// G·blk ≤ 2048, checked by the engine). Blocks: 64 positions for one token (a short context still
// spreads over many workgroups), up to 512 for prefill (bounds the partials).
// Dispatch: (tokens, nHeadKv, ⌈ctx / blk⌉) for the chunk's tokens t0 … (prefill runs a long chunk
// as several such dispatches, so the partials stay the size of one); attn_flash_rows: (rows,
// nHeadKv, ⌈ctx / blk⌉) (rows.glsl). Variant per K × V cache type.
#extension GL_GOOGLE_include_directive : enable
#extension GL_KHR_shader_subgroup_arithmetic : enable
#include "common.glsl"
#include "rows.glsl"
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
shared float q[2048];
shared float sc[2048];

void main() {
  uint tl = gl_WorkGroupID.x, t = pc.t0 + tl, kvh = gl_WorkGroupID.y, b = gl_WorkGroupID.z, tid = gl_LocalInvocationID.x;
  uint G = pc.nHead / pc.nHeadKv, hd = pc.hd;
  uint p = POS(t);
  uint u0 = b * pc.blk;
  if (u0 > p) return;  // the whole block is in the future (attn_merge skips it)
  uint n = min(p + 1u, u0 + pc.blk) - u0;
  uint ko = kvh * hd;
  for (uint i = tid; i < G * hd; i += 256u) q[i] = QG[t * pc.qStride + (kvh * G + i / hd) * 2u * hd + i % hd];
  barrier();
  for (uint i = gl_SubgroupID; i < n; i += gl_NumSubgroups) {
    uint ro = (u0 + i) * pc.kRowBytes;
    float s[MAXG];
    [[unroll]] for (uint g = 0u; g < MAXG; g++) s[g] = 0.0;
    // 4 K elements per trip, loaded together (hd / subgroup size is a multiple of 4: 256/32,
    // 256/64, 64/8 …; the tail loop covers the rest)
    uint d = gl_SubgroupInvocationID, S = gl_SubgroupSize;
    for (; d + 3u * S < hd; d += 4u * S) {
      float k[4];
      [[unroll]] for (uint j = 0u; j < 4u; j++) k[j] = k_get(ro, ko + d + j * S);
      [[unroll]] for (uint j = 0u; j < 4u; j++) [[unroll]] for (uint g = 0u; g < MAXG; g++) if (g < G) s[g] += q[g * hd + d + j * S] * k[j];
    }
    for (; d < hd; d += S) {
      float k = k_get(ro, ko + d);
      [[unroll]] for (uint g = 0u; g < MAXG; g++) if (g < G) s[g] += q[g * hd + d] * k;
    }
    [[unroll]] for (uint g = 0u; g < MAXG; g++) if (g < G) {
      float v = subgroupAdd(s[g]);
      if (subgroupElect()) sc[g * pc.blk + i] = v * pc.scale;
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
    // 8 positions per trip: their V loads are issued together (one at a time, the loop waited
    // out a memory latency per position)
    uint i = 0u;
    for (; i + 8u <= n; i += 8u) {
      float v[8];
      [[unroll]] for (uint j = 0u; j < 8u; j++) v[j] = v_get((u0 + i + j) * pc.vRowBytes, ko + tid);
      [[unroll]] for (uint j = 0u; j < 8u; j++) [[unroll]] for (uint g = 0u; g < MAXG; g++) if (g < G) o[g] += sc[g * pc.blk + i + j] * v[j];
    }
    for (; i < n; i++) {
      float v = v_get((u0 + i) * pc.vRowBytes, ko + tid);
      [[unroll]] for (uint g = 0u; g < MAXG; g++) if (g < G) o[g] += sc[g * pc.blk + i] * v;
    }
    [[unroll]] for (uint g = 0u; g < MAXG; g++) if (g < G) P[(slot0 + g * pc.nBlk) * hd + tid] = o[g];
  }
}
