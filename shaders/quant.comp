#version 450
// quant: rows of X as int8 levels (levels.glsl) for mvq.comp: the routed experts' SwiGLU outputs,
// the input of their down projections. A workgroup takes 256 values of a row (8 units), a thread 4.
// Dispatch: (ceil(n / 256), rows); n a multiple of 32 (a unit is wholly in the row or past it).
#extension GL_GOOGLE_include_directive : enable
#extension GL_EXT_control_flow_attributes : enable
#extension GL_KHR_shader_subgroup_shuffle : enable
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer XB { vec4 X4[]; };
layout(std430, binding = 1) writeonly buffer XQB { uint XQ[]; };
layout(std430, binding = 2) writeonly buffer XSB { vec4 XS[]; };
layout(push_constant) uniform PC { uint n; uint pad0; uint pad1; uint pad2; } pc;
#include "levels.glsl"
void main() {
  uint row = gl_WorkGroupID.y, tid = gl_LocalInvocationID.x, i = gl_WorkGroupID.x * 64u + tid;
  // a unit's 8 threads are 8 consecutive invocations of one subgroup (its size a power of two
  // ≥ 8, limits.ts), all in the row or all past it (n a multiple of 32)
  if (i >= pc.n / 4u) return;
  vec4 x = X4[row * (pc.n / 4u) + i];
  // the unit's amax: the thread's 4, then 3 exchanges with the unit's other threads (no shared
  // memory, no barrier; max is exact in any order, so the levels are the same bits as before)
  vec4 ax = abs(x);
  float amax = max(max(ax.x, ax.y), max(ax.z, ax.w));
  [[unroll]] for (uint m = 1u; m < 8u; m <<= 1) amax = max(amax, subgroupShuffleXor(amax, m));
  writeLevels(row, pc.n / 32u, i >> 3, tid & 7u, x, amax);
}
