#version 450
// gated_norm: o_h ← rms(o_h) ⊙ w ⊙ silu(z_h) over each DeltaNet value head (plain weight).
// Workgroup (t, h), thread per dim. Dispatch: (T, hv, 1).
#extension GL_GOOGLE_include_directive : enable
#include "common.glsl"
layout(local_size_x = 128) in;
layout(std430, binding = 0) buffer OB { float O[]; };
layout(std430, binding = 1) readonly buffer ZB { float Z[]; };
layout(std430, binding = 2) readonly buffer WB { float NW[]; };
layout(push_constant) uniform PC { uint dk; uint hv; float eps; uint pad; } pc;
shared float red[128];
void main() {
  uint t = gl_WorkGroupID.x, h = gl_WorkGroupID.y, d = gl_LocalInvocationID.x;
  uint o = (t * pc.hv + h) * pc.dk + d;
  float x = d < pc.dk ? O[o] : 0.0;
  red[d] = x * x;
  barrier();
  for (uint s = 64u; s > 0u; s >>= 1) { if (d < s) red[d] += red[d + s]; barrier(); }
  float r = inversesqrt(red[0] / float(pc.dk) + pc.eps);
  if (d < pc.dk) O[o] = x * r * NW[d] * siluf(Z[o]);
}
