#version 450
// argmax: the index of the largest logit of one row (ties: the lowest index, like the WASM
// sampler's greedy path), so greedy decoding needs no logits read-back. ARG = {index, flags}:
// flags bit 0 = the row holds a NaN (the host then samples from the read-back row instead).
// Index ~0u when every value is −∞ (the host decides then, too).
// Two stages (one workgroup over the 248K-entry row took 0.29 ms on the H200):
//   stage 0: workgroup g takes items [1024g, 1024g + 1024) (4 per thread, in index order so a
//            strict > keeps the first of equal values), wg_argmax.glsl, writes P[g] and its NaN
//            flag F[g]. Dispatch: (⌈n / 1024⌉, 1, 1).
//   stage 1: one workgroup reduces the `groups` partials into ARG. Dispatch: (1, 1, 1).
// A grammar's mask (MASK[0] != 0: bit i of MASK[1 + i/32] says token i is allowed; row 0 only,
// a single session's decode step) leaves the disallowed out of stage 0: ARG is then the arg-max
// among the allowed, and greedy constrained decoding reads no row either. The host writes MASK
// before the step (host-visible) and clears MASK[0] for steps that have no mask.
// Rows: workgroup y takes row y (L from offset + y·n, partials y·groups…, ARG[2y…]): a batched
// decode step's rows in one dispatch pair. Dispatch: (…, rows, 1).
#extension GL_GOOGLE_include_directive : enable
#extension GL_KHR_shader_subgroup_arithmetic : enable
#extension GL_KHR_shader_subgroup_vote : enable
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer LB { float L[]; };
layout(std430, binding = 1) buffer PB { uvec2 P[]; };
layout(std430, binding = 2) buffer FB { uint F[]; };
layout(std430, binding = 3) buffer AB { uint ARG[]; };
layout(std430, binding = 4) readonly buffer MB { uint MASK[]; };
layout(push_constant) uniform PC { uint n; uint offset; uint stage; uint groups; } pc;
shared uint sn[256];
#include "wg_argmax.glsl"
void main() {
  uint tid = gl_LocalInvocationID.x;
  float bv = uintBitsToFloat(0xFF800000u);  // −∞
  uint bi = 0xFFFFFFFFu;
  bool nan = false;
  uint row = gl_WorkGroupID.y, p0 = row * pc.groups;
  if (pc.stage == 0u) {
    uint base = gl_WorkGroupID.x * 1024u;
    bool masked = row == 0u && MASK[0] != 0u;
    for (uint i = base + tid; i < min(pc.n, base + 1024u); i += 256u) {
      if (masked && ((MASK[1u + (i >> 5)] >> (i & 31u)) & 1u) == 0u) continue;
      float v = L[pc.offset + row * pc.n + i];
      if (isnan(v)) nan = true;
      else if (v > bv) { bv = v; bi = i; }
    }
  } else {
    // partials in group order: their indices grow, so strict > still keeps the first
    for (uint g = p0 + tid; g < p0 + pc.groups; g += 256u) {
      float v = uintBitsToFloat(P[g].x);
      if (F[g] != 0u) nan = true;
      if (P[g].y != 0xFFFFFFFFu && v > bv) { bv = v; bi = P[g].y; }
    }
  }
  bool anyNan = subgroupAny(nan);
  if (subgroupElect()) sn[gl_SubgroupID] = anyNan ? 1u : 0u;
  wg_argmax(bv, bi);  // its barriers also make sn visible
  if (tid == 0u) {
    uint f = 0u;
    for (uint s = 0u; s < gl_NumSubgroups; s++) f |= sn[s];
    if (pc.stage == 0u) { P[p0 + gl_WorkGroupID.x] = uvec2(floatBitsToUint(bv), bi); F[p0 + gl_WorkGroupID.x] = f; }
    else { ARG[2u * row] = bi; ARG[2u * row + 1u] = f; }
  }
}
