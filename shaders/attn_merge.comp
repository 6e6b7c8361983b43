#version 450
// attn_merge: o_h = Σ_b e^(m_b − M) P_b / Σ_b e^(m_b − M) l_b over the blocks attn_flash wrote
// (M = max m_b; blocks past pos + t were not written and are skipped), times the sigmoid output
// gate (the second half of the head's q slice). Thread per dimension. Dispatch: (tokens, nHead, 1) for tokens t0 … (as attn_flash).
#extension GL_GOOGLE_include_directive : enable
#include "common.glsl"
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer PPB { float P[]; };
layout(std430, binding = 1) readonly buffer MLB { vec2 ML[]; };
layout(std430, binding = 2) readonly buffer QB { float QG[]; };
layout(std430, binding = 3) writeonly buffer OB { float O[]; };
layout(std430, binding = 4) readonly buffer PB { uint PARAMS[]; };
layout(push_constant) uniform PC { uint nHead; uint hd; uint nBlk; uint qStride; uint blk; uint t0; uint pad1; uint pad2; } pc;
void main() {
  uint tl = gl_WorkGroupID.x, t = pc.t0 + tl, h = gl_WorkGroupID.y, d = gl_LocalInvocationID.x;
  if (d >= pc.hd) return;
  uint p = PARAMS[0] + t;
  uint used = p / pc.blk + 1u, base = (tl * pc.nHead + h) * pc.nBlk;
  float M = -3.0e38;
  for (uint b = 0u; b < used; b++) M = max(M, ML[base + b].x);
  float o = 0.0, den = 0.0;
  // 4 blocks per trip: their loads are issued together (a 32K context has 512 blocks)
  uint b = 0u;
  for (; b + 4u <= used; b += 4u) {
    vec2 ml[4];
    float pv[4];
    [[unroll]] for (uint j = 0u; j < 4u; j++) { ml[j] = ML[base + b + j]; pv[j] = P[(base + b + j) * pc.hd + d]; }
    [[unroll]] for (uint j = 0u; j < 4u; j++) { float w = exp(ml[j].x - M); o += w * pv[j]; den += w * ml[j].y; }
  }
  for (; b < used; b++) {
    float w = exp(ML[base + b].x - M);
    o += w * P[(base + b) * pc.hd + d];
    den += w * ML[base + b].y;
  }
  float g = QG[t * pc.qStride + h * 2u * pc.hd + pc.hd + d];
  O[(t * pc.nHead + h) * pc.hd + d] = o / den * sigmoidf(g);
}
