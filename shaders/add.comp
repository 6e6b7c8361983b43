#version 450
// add: X[i] += A[i] (residual). Thread per element; dispatch ceil(n/256).
layout(local_size_x = 256) in;
layout(std430, binding = 0) buffer XB { float X[]; };
layout(std430, binding = 1) readonly buffer AB { float A[]; };
layout(push_constant) uniform PC { uint n; } pc;
void main() { uint i = gl_GlobalInvocationID.x; if (i < pc.n) X[i] += A[i]; }
