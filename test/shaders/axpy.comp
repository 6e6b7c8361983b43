#version 450
// axpy: y[i] = a * x[i] + y[i]. A test fixture (test/native.test.ts), added to the addon at run
// time: a module from outside the build runs through the device's dispatch path.
// Thread mapping: one invocation per element; workgroup 64; dispatch ceil(n / 64).
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) buffer Y { float y[]; };
layout(push_constant) uniform PC { uint n; float a; } pc;
void main() {
  uint i = gl_GlobalInvocationID.x;
  if (i < pc.n) y[i] = pc.a * x[i] + y[i];
}
