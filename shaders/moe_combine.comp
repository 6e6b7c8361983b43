#version 450
// moe_combine: M[t] = Σ_k w_tk · D[t,k] + σ(SG[t]) · DS[t]  (routed experts + gated shared expert),
// written to M for FFN steering (without steering the combine is fused into rmsnorm.comp).
// Thread per (t, i); dispatch ceil(T·nEmbd/256).
#extension GL_GOOGLE_include_directive : enable
#include "common.glsl"
layout(local_size_x = 256) in;
layout(std430, binding = 0) writeonly buffer MB { float M[]; };
layout(std430, binding = 1) readonly buffer DB { float D[]; };
layout(std430, binding = 2) readonly buffer WB { float WTS[]; };
layout(std430, binding = 3) readonly buffer SB { float DS[]; };
layout(std430, binding = 4) readonly buffer GB { float SG[]; };
layout(push_constant) uniform PC { uint nEmbd; uint K; uint T; } pc;
#include "moe.glsl"
void main() {
  uint g = gl_GlobalInvocationID.x;
  if (g >= pc.T * pc.nEmbd) return;
  M[g] = moe_out(g / pc.nEmbd, g % pc.nEmbd, pc.nEmbd, pc.K);
}
