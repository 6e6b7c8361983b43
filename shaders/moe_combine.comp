#version 450
// moe_combine: M[t] = Σ_k w_tk · D[t,k] + σ(SG[t]) · DS[t]  (routed experts + gated shared expert);
// with flag bit 0 the result is added into the residual X directly (no steering), else written to M.
// Thread per (t, i); dispatch ceil(T·nEmbd/256).
#extension GL_GOOGLE_include_directive : enable
#include "common.glsl"
layout(local_size_x = 256) in;
layout(std430, binding = 0) buffer XB { float X[]; };
layout(std430, binding = 1) readonly buffer DB { float D[]; };
layout(std430, binding = 2) readonly buffer WB { float WTS[]; };
layout(std430, binding = 3) readonly buffer SB { float DS[]; };
layout(std430, binding = 4) readonly buffer GB { float SG[]; };
layout(push_constant) uniform PC { uint nEmbd; uint K; uint T; uint addToX; } pc;
void main() {
  uint g = gl_GlobalInvocationID.x;
  if (g >= pc.T * pc.nEmbd) return;
  uint t = g / pc.nEmbd, i = g % pc.nEmbd;
  float acc = 0.0;
  for (uint k = 0u; k < pc.K; k++) acc += WTS[t * pc.K + k] * D[(t * pc.K + k) * pc.nEmbd + i];
  float v = acc + sigmoidf(SG[t]) * DS[g];
  if (pc.addToX != 0u) X[g] += v; else X[g] = v;
}
