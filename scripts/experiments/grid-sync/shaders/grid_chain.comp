#version 450
// grid_chain: what a level of real work costs inside a persistent kernel against the same level
// as a dispatch of its own (#17). A chain of `rounds` dependent matrix-vector products over n
// (x ← tanh(W_r · x), W_r one of nMat n×n f16 matrices, more than the L2 holds together): each
// row by one subgroup, n/2 f16 pairs, the vector staged in shared memory — the shape of the decode
// step's out-projections. persist = 1: one dispatch runs every round with device-wide barriers
// between them (grid.glsl); persist = 0: one dispatch runs round r0 only, and the host records
// `rounds` of them with a pipeline barrier after each. Both do the same arithmetic in the same
// order (rows by workgroup and subgroup, whatever the workgroup count), so their results agree
// bit for bit when the barriers order memory.
#extension GL_KHR_shader_subgroup_basic : enable
#extension GL_KHR_shader_subgroup_arithmetic : enable
layout(local_size_x = 256) in;
layout(std430, binding = 0) coherent volatile buffer CB { uint CTL[]; };
layout(std430, binding = 1) readonly buffer WB { uint W[]; };
// two halves of n: round r reads half r % 2 and writes the other
layout(std430, binding = 2) coherent buffer XB { float X[]; };
layout(push_constant) uniform PC { uint nWG; uint rounds; uint spinLimit; uint persist; uint n; uint nMat; uint r0; uint pad; } pc;
#include "grid.glsl"

// n ≤ 4096 (the host checks)
shared float xs[4096];

void level(uint r) {
  uint src = (r & 1u) * pc.n, dst = ((r + 1u) & 1u) * pc.n, pairs = pc.n / 2u;
  uint m = (r % pc.nMat) * pc.n * pairs;
  for (uint j = gl_LocalInvocationID.x; j < pc.n; j += 256u) xs[j] = X[src + j];
  barrier();
  uint nsg = gl_NumSubgroups, lane = gl_SubgroupInvocationID, S = gl_SubgroupSize;
  for (uint row = gl_WorkGroupID.x * nsg + gl_SubgroupID; row < pc.n; row += pc.nWG * nsg) {
    uint base = m + row * pairs;
    float s = 0.0;
    for (uint j = lane; j < pairs; j += S) {
      vec2 w = unpackHalf2x16(W[base + j]);
      s += w.x * xs[2u * j] + w.y * xs[2u * j + 1u];
    }
    s = subgroupAdd(s);
    if (lane == 0u) X[dst + row] = tanh(s);
  }
}

void main() {
  if (pc.persist == 0u) { level(pc.r0); return; }
  if (!gridStart()) return;
  for (uint r = 0u; r < pc.rounds; r++) {
    level(r);
    // also orders this round's reads of xs before the next round's writes
    if (!gridBarrier(r)) return;
  }
}
