#version 450
// attn_values: o_h = Σ_u p_u · v_u (GQA kv head), then the sigmoid output gate (second half of the
// head's q slice). Thread mapping: workgroup (t, h), thread d over the head dimension.
// Dispatch: (T, nHead, 1). Variant per V cache type.
#extension GL_GOOGLE_include_directive : enable
#include "common.glsl"
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer SB { float S[]; };
layout(std430, binding = 1) readonly buffer VB { uint VC[]; };
layout(std430, binding = 2) readonly buffer QB { float QG[]; };
layout(std430, binding = 3) buffer OB { float O[]; };
layout(std430, binding = 4) readonly buffer PB { uint PARAMS[]; };
layout(push_constant) uniform PC { uint nHead; uint nHeadKv; uint hd; uint ctx; uint vRowBytes; uint qStride; uint pad0; uint pad1; } pc;
#define KVBUF VC
#include "kv.glsl"

void main() {
  uint t = gl_WorkGroupID.x, h = gl_WorkGroupID.y, d = gl_LocalInvocationID.x;
  if (d >= pc.hd) return;
  uint p = PARAMS[0] + t;
  uint kvh = h / (pc.nHead / pc.nHeadKv);
  uint row = (t * pc.nHead + h) * pc.ctx;
  float o = 0.0;
  for (uint u = 0u; u <= p; u++) o += S[row + u] * kv_get_(u * pc.vRowBytes, kvh * pc.hd + d);
  float g = QG[t * pc.qStride + h * 2u * pc.hd + pc.hd + d];
  O[(t * pc.nHead + h) * pc.hd + d] = o * sigmoidf(g);
}
