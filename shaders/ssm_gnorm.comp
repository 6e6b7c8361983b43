#version 450
// ssm_gnorm: the DeltaNet output's gated norm, in place: o_h ← o_h / rms(o_h) ⊙ w ⊙ silu(z_h) per
// token and value head (dk values). deltanet.comp fuses it; deltanet_chunk splits a head's columns
// over workgroups, so prefill runs it here. Thread per value (subgroup sums, then across the
// subgroups in shared memory). Dispatch: (T, hv, 1). dk ≤ 128.
#extension GL_GOOGLE_include_directive : enable
#extension GL_KHR_shader_subgroup_arithmetic : enable
#include "common.glsl"
layout(local_size_x = 128) in;
layout(std430, binding = 0) buffer OB { float O[]; };
layout(std430, binding = 1) readonly buffer ZB { float Z[]; };
layout(std430, binding = 2) readonly buffer NB { float NW[]; };
layout(push_constant) uniform PC { uint dk; uint hv; float eps; uint pad; } pc;
shared float red[128];
void main() {
  uint j = gl_LocalInvocationID.x;
  uint o = (gl_WorkGroupID.x * pc.hv + gl_WorkGroupID.y) * pc.dk + j;
  float x = j < pc.dk ? O[o] : 0.0;
  float ss = subgroupAdd(x * x);
  if (subgroupElect()) red[gl_SubgroupID] = ss;
  barrier();
  float tot = 0.0;
  for (uint sg = 0u; sg < gl_NumSubgroups; sg++) tot += red[sg];
  if (j < pc.dk) O[o] = x * inversesqrt(tot / float(pc.dk) + pc.eps) * NW[j] * siluf(Z[o]);
}
