#version 450
// router: per token, softmax over the expert logits, top-k (ties: lowest id), renormalised weights.
// Thread mapping: workgroup per token, 256 threads striding over experts. Max and sum reduce within
//   subgroups, then across the workgroup's subgroups through shared memory; each of the k arg-max
//   rounds is one wg_argmax.glsl (two barriers; any subgroup size).
// Dispatch: (T, 1, 1).
#extension GL_GOOGLE_include_directive : enable
#extension GL_KHR_shader_subgroup_arithmetic : enable
layout(local_size_x = 256) in;
layout(std430, binding = 0) buffer RB { float R[]; };
layout(std430, binding = 1) buffer IB { uint IDS[]; };
layout(std430, binding = 2) buffer WB { float WTS[]; };
layout(push_constant) uniform PC { uint nExpert; uint K; } pc;
shared float p[1024];
shared float sv[256];
#include "wg_argmax.glsl"

float wgMax(float x) {
  float v = subgroupMax(x);
  if (subgroupElect()) sv[gl_SubgroupID] = v;
  barrier();
  float r = sv[0];
  for (uint s = 1u; s < gl_NumSubgroups; s++) r = max(r, sv[s]);
  barrier();
  return r;
}

float wgSum(float x) {
  float v = subgroupAdd(x);
  if (subgroupElect()) sv[gl_SubgroupID] = v;
  barrier();
  float r = 0.0;
  for (uint s = 0u; s < gl_NumSubgroups; s++) r += sv[s];
  barrier();
  return r;
}

void main() {
  uint t = gl_WorkGroupID.x, tid = gl_LocalInvocationID.x;
  uint o = t * pc.nExpert;
  float mx = -3.0e38;
  for (uint e = tid; e < pc.nExpert; e += 256u) { p[e] = R[o + e]; mx = max(mx, p[e]); }
  mx = wgMax(mx);
  float sum = 0.0;
  for (uint e = tid; e < pc.nExpert; e += 256u) { p[e] = exp(p[e] - mx); sum += p[e]; }
  float inv = 1.0 / wgSum(sum);
  // each thread only ever touches its own experts e ≡ tid (mod 256): no barrier needed on p
  for (uint e = tid; e < pc.nExpert; e += 256u) p[e] *= inv;
  float tot = 0.0;
  for (uint k = 0u; k < pc.K; k++) {
    float bv = -1.0; uint bi = 0xFFFFFFFFu;
    for (uint e = tid; e < pc.nExpert; e += 256u) if (p[e] > bv) { bv = p[e]; bi = e; }
    wg_argmax(bv, bi);
    if (bi % 256u == tid) p[bi] = -2.0;  // the owner takes the winner out of later rounds
    if (tid == 0u) { IDS[t * pc.K + k] = bi; WTS[t * pc.K + k] = bv; }
    tot += bv;
  }
  if (tid == 0u) for (uint k = 0u; k < pc.K; k++) WTS[t * pc.K + k] /= tot;
}
