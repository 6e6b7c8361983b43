#version 450
// argmax: the index of the largest logit of one row (ties: the lowest index, like the WASM
// sampler's greedy path), so greedy decoding needs no logits read-back. ARG = {index, flags}:
// flags bit 0 = the row holds a NaN (the host then samples from the read-back row instead).
// Thread mapping: one workgroup of 256 threads striding over the row, then wg_argmax.glsl.
// Dispatch: (1, 1, 1).
#extension GL_GOOGLE_include_directive : enable
#extension GL_KHR_shader_subgroup_arithmetic : enable
#extension GL_KHR_shader_subgroup_vote : enable
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer LB { float L[]; };
layout(std430, binding = 1) buffer AB { uint ARG[]; };
layout(push_constant) uniform PC { uint n; uint offset; } pc;
shared uint sn[256];
#include "wg_argmax.glsl"
void main() {
  uint tid = gl_LocalInvocationID.x;
  float bv = uintBitsToFloat(0xFF800000u);  // −∞
  uint bi = 0xFFFFFFFFu;
  bool nan = false;
  // within a thread indices grow, so a strict > keeps the first of equal values
  for (uint i = tid; i < pc.n; i += 256u) {
    float v = L[pc.offset + i];
    if (isnan(v)) nan = true;
    else if (v > bv) { bv = v; bi = i; }
  }
  bool anyNan = subgroupAny(nan);
  if (subgroupElect()) sn[gl_SubgroupID] = anyNan ? 1u : 0u;
  wg_argmax(bv, bi);  // its barriers also make sn visible
  if (tid == 0u) {
    uint f = 0u;
    for (uint s = 0u; s < gl_NumSubgroups; s++) f |= sn[s];
    ARG[0] = bi;
    ARG[1] = f;
  }
}
