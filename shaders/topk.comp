#version 450
// topk: one stage of an exact top-k over a logits row, so sampling with temperature reads k
// (logit, id) pairs instead of the whole row. Order: larger logit first, ties to the lower id (the
// WASM sampler's order), so the kept set is exactly the first k of the CPU sampler's sort.
// Stage 0 reads the row L[offset …], later stages the previous stage's pairs IN. Each workgroup
// takes 1024 items (4 per thread) and writes its best k to OUT[wg·k …] by k rounds of workgroup
// arg-max (wg_argmax.glsl), the winner marked taken each round. Stages run until one workgroup is
// left (⌈n/1024⌉ workgroups per stage); its k pairs are the answer. Missing items are (−∞, ~0u):
// a real −∞ logit still wins over them by its lower id. NaN rows are not sent here (argmax flags).
// Dispatch: (⌈n / 1024⌉, 1, 1).
#extension GL_GOOGLE_include_directive : enable
#extension GL_KHR_shader_subgroup_arithmetic : enable
#extension GL_EXT_control_flow_attributes : enable
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer LB { float L[]; };
layout(std430, binding = 1) readonly buffer IB { uvec2 IN[]; };
layout(std430, binding = 2) writeonly buffer OB { uvec2 OUT[]; };
layout(push_constant) uniform PC { uint n; uint k; uint offset; uint stage; } pc;
#include "wg_argmax.glsl"
const uint NONE = 0xFFFFFFFFu;
void main() {
  uint tid = gl_LocalInvocationID.x, base = gl_WorkGroupID.x * 1024u;
  float v[4];
  uint id[4];
  [[unroll]] for (uint j = 0u; j < 4u; j++) {
    uint i = base + tid + 256u * j;
    v[j] = uintBitsToFloat(0xFF800000u);
    id[j] = NONE;
    if (i < pc.n) {
      if (pc.stage == 0u) { v[j] = L[pc.offset + i]; id[j] = i; }
      else { v[j] = uintBitsToFloat(IN[i].x); id[j] = IN[i].y; }
      if (isnan(v[j])) { v[j] = uintBitsToFloat(0xFF800000u); id[j] = NONE; }
    }
  }
  for (uint r = 0u; r < pc.k; r++) {
    float bv = v[0];
    uint bi = id[0];
    [[unroll]] for (uint j = 1u; j < 4u; j++) if (v[j] > bv || (v[j] == bv && id[j] < bi)) { bv = v[j]; bi = id[j]; }
    wg_argmax(bv, bi);
    if (tid == 0u) OUT[gl_WorkGroupID.x * pc.k + r] = uvec2(floatBitsToUint(bv), bi);
    // the winner leaves its thread's list (ids are unique; NONE never wins over a real item)
    if (bi != NONE) [[unroll]] for (uint j = 0u; j < 4u; j++) if (id[j] == bi) { v[j] = uintBitsToFloat(0xFF800000u); id[j] = NONE; }
  }
}
