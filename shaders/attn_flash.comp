#version 450
// attn_flash: attention of one query head over one block of key positions in a single pass
// (flash-decoding): scores s_u = q_h·k_u/√hd for u ∈ [u0, u1) (causal: u ≤ pos + t), the block's
// max m and l = Σ e^(s_u − m), and P = Σ e^(s_u − m) v_u; attn_merge combines the blocks. Replaces
// a score pass, a softmax pass and a value pass with their full-context score rows (and two
// barrier levels). GQA: kv head h / (nHead / nHeadKv).
// Thread mapping: scores: one subgroup per position (lanes over dimensions, so a K row is read
// as coalesced lines; subgroupAdd), the subgroups striding over the block; values: one thread
// per dimension (V rows read as coalesced lines). The block's scores live in shared memory.
// Blocks: 64 positions for one token (a short context still spreads over many workgroups), 512
// for prefill (bounds the partials). Dispatch: (T, nHead, ⌈ctx / blk⌉). Variant per K × V type.
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
  uint blk; uint pad0; uint pad1; uint pad2;
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
shared float q[256];
shared float sc[512];
shared float red[256];

void main() {
  uint t = gl_WorkGroupID.x, h = gl_WorkGroupID.y, b = gl_WorkGroupID.z, tid = gl_LocalInvocationID.x;
  uint p = PARAMS[0] + t;
  uint u0 = b * pc.blk;
  if (u0 > p) return;  // the whole block is in the future (attn_merge skips it)
  uint n = min(p + 1u, u0 + pc.blk) - u0;
  uint kvh = h / (pc.nHead / pc.nHeadKv), ko = kvh * pc.hd;
  if (tid < pc.hd) q[tid] = QG[t * pc.qStride + h * 2u * pc.hd + tid];
  barrier();
  for (uint i = gl_SubgroupID; i < n; i += gl_NumSubgroups) {
    uint ro = (u0 + i) * pc.kRowBytes;
    float s = 0.0;
    for (uint d = gl_SubgroupInvocationID; d < pc.hd; d += gl_SubgroupSize) s += q[d] * k_get(ro, ko + d);
    s = subgroupAdd(s);
    if (subgroupElect()) sc[i] = s * pc.scale;
  }
  barrier();
  // the block's max, then e^(s − m) in place and their sum (subgroups, then shared memory)
  float m = -3.0e38;
  for (uint i = tid; i < n; i += 256u) m = max(m, sc[i]);
  m = subgroupMax(m);
  if (subgroupElect()) red[gl_SubgroupID] = m;
  barrier();
  m = red[0];
  for (uint s = 1u; s < gl_NumSubgroups; s++) m = max(m, red[s]);
  barrier();
  float l = 0.0;
  for (uint i = tid; i < n; i += 256u) { float e = exp(sc[i] - m); sc[i] = e; l += e; }
  l = subgroupAdd(l);
  if (subgroupElect()) red[gl_SubgroupID] = l;
  barrier();
  uint slot = (t * pc.nHead + h) * pc.nBlk + b;
  if (tid < pc.hd) {
    float o = 0.0;
    for (uint i = 0u; i < n; i++) o += sc[i] * v_get((u0 + i) * pc.vRowBytes, ko + tid);
    P[slot * pc.hd + tid] = o;
  }
  if (tid == 0u) {
    float tot = 0.0;
    for (uint s = 0u; s < gl_NumSubgroups; s++) tot += red[s];
    ML[slot] = vec2(m, tot);
  }
}
