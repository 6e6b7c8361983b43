#version 450
// attn_values: partial o_h over one block of blk key positions (64 for decode, so a short context
// still spreads over many workgroups instead of one long serial loop; 512 for prefill, bounding P): P[(t,h,blk)][d] = Σ_u p_u v_u[d]
// (GQA kv head). Thread per dimension. attn_reduce sums the blocks and applies the output gate.
// Dispatch: (T, nHead, ceil(ctx/blk)). Variant per V cache type.
#extension GL_GOOGLE_include_directive : enable
#include "common.glsl"
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer SB { float S[]; };
layout(std430, binding = 1) readonly buffer VB { uint VC[]; };
layout(std430, binding = 2) buffer PPB { float P[]; };
layout(std430, binding = 3) readonly buffer PB { uint PARAMS[]; };
layout(push_constant) uniform PC { uint nHead; uint nHeadKv; uint hd; uint ctx; uint vRowBytes; uint nBlk; uint blk; uint pad1; } pc;
#define KVBUF VC
#include "kv.glsl"

void main() {
  uint t = gl_WorkGroupID.x, h = gl_WorkGroupID.y, blk = gl_WorkGroupID.z, d = gl_LocalInvocationID.x;
  if (d >= pc.hd) return;
  uint p = PARAMS[0] + t;
  uint kvh = h / (pc.nHead / pc.nHeadKv);
  uint row = (t * pc.nHead + h) * pc.ctx;
  uint u0 = blk * pc.blk, u1 = min(p + 1u, u0 + pc.blk);
  float o = 0.0;
  for (uint u = u0; u < u1; u++) o += S[row + u] * kv_get_(u * pc.vRowBytes, kvh * pc.hd + d);
  P[((t * pc.nHead + h) * pc.nBlk + blk) * pc.hd + d] = o;
}
