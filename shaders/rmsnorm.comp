#version 450
// rmsnorm: Y[t] = X[xRow0 + t] / sqrt(mean(x²) + eps) ⊙ W. Workgroup per row, 1024 threads (2
// elements each at 2048: with 256 threads the fused MoE combine's ~18 loads per element ran as 8
// dependent rounds per thread, and the one-workgroup decode norm is on the critical path 81 times
// a step), subgroupAdd then a sum over the subgroups in shared memory (one barrier).
// Dispatch: (rows, 1, 1).
// Residual updates fused in front of the norm (one dispatch and barrier instead of two), written
// back to X first: mode 1: X[t] += R[t] (attention output); mode 2: X[t] += Σ_k w_tk·D[t,k] +
// σ(SG[t])·DS[t] (the MoE combine of the previous layer, moe.glsl). Each thread
// re-reads only elements it wrote.
#extension GL_GOOGLE_include_directive : enable
#extension GL_KHR_shader_subgroup_arithmetic : enable
#extension GL_KHR_shader_subgroup_shuffle : enable
#include "common.glsl"
layout(local_size_x = 1024) in;
const uint NT = 1024u;
#define EPT_MAX 4096
layout(std430, binding = 0) buffer XB { float X[]; };
layout(std430, binding = 1) buffer YB { float Y[]; };
layout(std430, binding = 2) readonly buffer WB { float Wt[]; };
layout(std430, binding = 3) readonly buffer RB { float R[]; };
layout(std430, binding = 4) readonly buffer DB { float D[]; };
layout(std430, binding = 5) readonly buffer WTB { float WTS[]; };
layout(std430, binding = 6) readonly buffer DSB { float DS[]; };
layout(std430, binding = 7) readonly buffer SGB { float SG[]; };
// quant = 1: also the output rows as int8 levels (levels.glsl) for mvq.comp
layout(std430, binding = 8) writeonly buffer XQB { uint XQ[]; };
layout(std430, binding = 9) writeonly buffer XSB { vec4 XS[]; };
#include "levels.glsl"
layout(push_constant) uniform PC { uint n; uint xRow0; float eps; uint mode; uint K; uint quant; uint pad1; uint pad2; } pc;
shared float red[1024];
shared float ys[EPT_MAX];
#include "moe.glsl"

// Up to EPT elements per thread stay in registers, the norm weights loaded before the barrier
// (n ≤ EPT·1024: the model's 2048 takes 2): the one-workgroup norm's latency is on the decode
// step's critical path 81 times. Larger n loops over X as before.
const uint EPT = 4u;
// element i of row t (at xo) after the pending update, written back to X when there is one
float updated(uint xo, uint t, uint i) {
  float v = X[xo + i];
  if (pc.mode == 1u) v += R[xo + i];
  else if (pc.mode == 2u) v += moe_out(pc.xRow0 + t, i, pc.n, pc.K);
  if (pc.mode != 0u) X[xo + i] = v;
  return v;
}
// The row's levels (levels.glsl; held rows only: the model's n ≤ 4096, a multiple of 32): thread i
// takes values 4i … 4i+3, i.e. word i % 8 of unit i / 8
void quantize(uint t) {
  barrier();
  uint tid = gl_LocalInvocationID.x;
  if (tid >= pc.n / 4u) return;
  // a unit's 8 threads all below n / 4 (n a multiple of 32), as writeLevels needs
  writeLevels(t, pc.n / 32u, tid >> 3, tid & 7u, vec4(ys[4u * tid], ys[4u * tid + 1u], ys[4u * tid + 2u], ys[4u * tid + 3u]));
}
void main() {
  uint t = gl_WorkGroupID.x, tid = gl_LocalInvocationID.x;
  uint xo = (pc.xRow0 + t) * pc.n, yo = t * pc.n;
  float ss = 0.0;
  bool held = pc.n <= EPT * NT;
  float xv[EPT], wv[EPT];
  [[unroll]] for (uint e = 0u; e < EPT; e++) {
    uint i = tid + e * NT;
    xv[e] = 0.0; wv[e] = 0.0;
    if (held && i < pc.n) wv[e] = Wt[i];
  }
  if (held) {
    [[unroll]] for (uint e = 0u; e < EPT; e++) {
      uint i = tid + e * NT;
      if (i < pc.n) { xv[e] = updated(xo, t, i); ss += xv[e] * xv[e]; }
    }
  } else {
    for (uint i = tid; i < pc.n; i += NT) { float v = updated(xo, t, i); ss += v * v; }
  }
  float v = subgroupAdd(ss);
  if (subgroupElect()) red[gl_SubgroupID] = v;
  barrier();
  float tot = 0.0;
  for (uint s = 0u; s < gl_NumSubgroups; s++) tot += red[s];
  float r = inversesqrt(tot / float(pc.n) + pc.eps);
  if (held) {
    [[unroll]] for (uint e = 0u; e < EPT; e++) {
      uint i = tid + e * NT;
      if (i < pc.n) {
        float y = xv[e] * r * wv[e];
        Y[yo + i] = y;
        // the row in shared memory for quantize() (only then: the norm runs 81 times a step)
        if (pc.quant != 0u) ys[i] = y;
      }
    }
    if (pc.quant != 0u) quantize(t);
  } else {
    for (uint i = tid; i < pc.n; i += NT) Y[yo + i] = X[xo + i] * r * Wt[i];
  }
}
