#version 450
// quant: rows of X as int8 levels (levels.glsl) for mvq.comp: the routed experts' SwiGLU outputs,
// the input of their down projections. A workgroup takes 256 values of a row (8 units), a thread 4.
// Dispatch: (ceil(n / 256), rows); n a multiple of 32 (a unit is wholly in the row or past it).
#extension GL_GOOGLE_include_directive : enable
#extension GL_EXT_control_flow_attributes : enable
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer XB { vec4 X4[]; };
layout(std430, binding = 1) writeonly buffer XQB { uint XQ[]; };
layout(std430, binding = 2) writeonly buffer XSB { vec4 XS[]; };
layout(push_constant) uniform PC { uint n; uint pad0; uint pad1; uint pad2; } pc;
#include "levels.glsl"
shared float v[256];
void main() {
  uint row = gl_WorkGroupID.y, tid = gl_LocalInvocationID.x, i = gl_WorkGroupID.x * 64u + tid;
  bool in_ = i < pc.n / 4u;
  vec4 x = in_ ? X4[row * (pc.n / 4u) + i] : vec4(0.0);
  v[4u * tid] = x.x; v[4u * tid + 1u] = x.y; v[4u * tid + 2u] = x.z; v[4u * tid + 3u] = x.w;
  barrier();
  if (!in_) return;
  uint lu = tid >> 3;
  float amax = 0.0;
  for (uint k = 0u; k < 32u; k++) amax = max(amax, abs(v[32u * lu + k]));
  writeLevels(row, pc.n / 32u, i >> 3, tid & 7u, x, amax);
}
