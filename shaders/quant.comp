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
  // a unit's 8 threads are all in the row or all past it (n a multiple of 32), as writeLevels
  // needs (it finds the unit's amax by subgroup exchanges: no shared memory, no barrier)
  if (i >= pc.n / 4u) return;
  writeLevels(row, pc.n / 32u, i >> 3, tid & 7u, X4[row * (pc.n / 4u) + i]);
}
