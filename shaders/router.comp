#version 450
// router: per token, softmax over the expert logits, top-k (ties: lowest id), renormalised weights.
// Thread mapping: one subgroup per token does it all (the workgroup's other subgroups, if any,
// exit): lane l holds experts l, l + S, l + 2S, … (S = subgroup size; ≤ 32 each, so nExpert ≤
// 32·S, checked by the engine) in registers; max, sum and each of the k arg-max rounds are
// subgroup operations, with no barrier or shared memory at all (the workgroup version's ~20
// barriers made it a 12 µs step of every layer's critical path).
// Dispatch: (T, 1, 1).
#extension GL_GOOGLE_include_directive : enable
#extension GL_KHR_shader_subgroup_arithmetic : enable
#extension GL_EXT_control_flow_attributes : enable
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer RB { float R[]; };
layout(std430, binding = 1) writeonly buffer IB { uint IDS[]; };
layout(std430, binding = 2) buffer WB { float WTS[]; };
layout(push_constant) uniform PC { uint nExpert; uint K; } pc;
const uint M = 32u;
void main() {
  if (gl_SubgroupID != 0u) return;
  uint t = gl_WorkGroupID.x, lane = gl_SubgroupInvocationID, S = gl_SubgroupSize;
  uint o = t * pc.nExpert;
  float p[M];
  float mx = -3.0e38;
  [[unroll]] for (uint m = 0u; m < M; m++) {
    uint e = lane + S * m;
    p[m] = e < pc.nExpert ? R[o + e] : -3.0e38;
    mx = max(mx, p[m]);
  }
  mx = subgroupMax(mx);
  float sum = 0.0;
  [[unroll]] for (uint m = 0u; m < M; m++) {
    uint e = lane + S * m;
    p[m] = e < pc.nExpert ? exp(p[m] - mx) : 0.0;
    sum += p[m];
  }
  float inv = 1.0 / subgroupAdd(sum);
  [[unroll]] for (uint m = 0u; m < M; m++) p[m] = lane + S * m < pc.nExpert ? p[m] * inv : -1.0;
  float tot = 0.0;
  for (uint k = 0u; k < pc.K; k++) {
    // this lane's best: its experts grow with m, so a strict > keeps the lowest id on ties
    float bv = -1.0; uint bi = 0xFFFFFFFFu;
    [[unroll]] for (uint m = 0u; m < M; m++) if (p[m] > bv) { bv = p[m]; bi = lane + S * m; }
    float wv = subgroupMax(bv);
    uint wi = subgroupMin(bv == wv ? bi : 0xFFFFFFFFu);
    // the owner takes the winner out of later rounds
    [[unroll]] for (uint m = 0u; m < M; m++) if (lane + S * m == wi) p[m] = -2.0;
    if (lane == 0u) { IDS[t * pc.K + k] = wi; WTS[t * pc.K + k] = wv; }
    tot += wv;
  }
  if (lane == 0u) for (uint k = 0u; k < pc.K; k++) WTS[t * pc.K + k] /= tot;
}
