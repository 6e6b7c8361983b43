#version 450
// attn_reduce: o_h = Σ_blocks P (blocks past pos+t hold stale data and are skipped), times the
// sigmoid output gate (second half of the head's q slice). Thread per dimension.
// Dispatch: (T, nHead, 1).
#extension GL_GOOGLE_include_directive : enable
#include "common.glsl"
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer PPB { float P[]; };
layout(std430, binding = 1) readonly buffer QB { float QG[]; };
layout(std430, binding = 2) buffer OB { float O[]; };
layout(std430, binding = 3) readonly buffer PB { uint PARAMS[]; };
layout(push_constant) uniform PC { uint nHead; uint hd; uint nBlk; uint qStride; uint blk; } pc;
void main() {
  uint t = gl_WorkGroupID.x, h = gl_WorkGroupID.y, d = gl_LocalInvocationID.x;
  if (d >= pc.hd) return;
  uint p = PARAMS[0] + t;
  uint used = p / pc.blk + 1u;
  float o = 0.0;
  for (uint b = 0u; b < used; b++) o += P[((t * pc.nHead + h) * pc.nBlk + b) * pc.hd + d];
  float g = QG[t * pc.qStride + h * 2u * pc.hd + pc.hd + d];
  O[(t * pc.nHead + h) * pc.hd + d] = o * sigmoidf(g);
}
