#version 450
// swiglu: G[i] = silu(G[i]) · U[i]. Thread per element; dispatch ceil(n/256).
#extension GL_GOOGLE_include_directive : enable
#include "common.glsl"
layout(local_size_x = 256) in;
layout(std430, binding = 0) buffer GB { float G[]; };
layout(std430, binding = 1) readonly buffer UB { float U[]; };
layout(push_constant) uniform PC { uint n; } pc;
void main() { uint i = gl_GlobalInvocationID.x; if (i < pc.n) G[i] = siluf(G[i]) * U[i]; }
