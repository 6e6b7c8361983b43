#version 450
// attn_scores: raw causal scores s_u = q_h · k_u / sqrt(hd) for u ≤ pos+t (GQA kv head h/(nHead/nHeadKv)).
// Thread mapping: one key position per thread; workgroup (t, h, block of 256 positions), so long
//   contexts spread over many workgroups; the query head is staged in shared memory.
// Dispatch: (T, nHead, ceil(ctx/256)). Variant per K cache type. Softmax: attn_softmax.
#extension GL_GOOGLE_include_directive : enable
#include "common.glsl"
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer QB { float QG[]; };
layout(std430, binding = 1) readonly buffer KB { uint KC[]; };
layout(std430, binding = 2) buffer SB { float S[]; };
layout(std430, binding = 3) readonly buffer PB { uint PARAMS[]; };
layout(push_constant) uniform PC { uint nHead; uint nHeadKv; uint hd; uint ctx; uint kRowBytes; uint qStride; float scale; uint pad; } pc;
#define KVBUF KC
#include "kv.glsl"
shared float q[256];

void main() {
  uint t = gl_WorkGroupID.x, h = gl_WorkGroupID.y, tid = gl_LocalInvocationID.x;
  uint p = PARAMS[0] + t;
  uint u = gl_WorkGroupID.z * 256u + tid;
  if (gl_WorkGroupID.z * 256u > p) return; // the whole block is in the future
  uint kvh = h / (pc.nHead / pc.nHeadKv);
  if (tid < pc.hd) q[tid] = QG[t * pc.qStride + h * 2u * pc.hd + tid];
  barrier();
  if (u > p) return;
  float s = 0.0;
  uint ro = u * pc.kRowBytes;
  for (uint d = 0u; d < pc.hd; d++) s += q[d] * kv_get_(ro, kvh * pc.hd + d);
  S[(t * pc.nHead + h) * pc.ctx + u] = s * pc.scale;
}
