#version 450
// steer: y ← y − s·d·(d·y) for each of T rows (d = this layer's unit direction), in place.
// Workgroup per row, 256 threads, shared-memory reduction of d·y. Dispatch: (T, 1, 1).
layout(local_size_x = 256) in;
layout(std430, binding = 0) buffer YB { float Y[]; };
layout(std430, binding = 1) readonly buffer DB { float D[]; };
layout(push_constant) uniform PC { uint n; uint dOffset; float s; uint pad; } pc;
shared float red[256];
void main() {
  uint t = gl_WorkGroupID.x, tid = gl_LocalInvocationID.x;
  uint o = t * pc.n;
  float acc = 0.0;
  for (uint i = tid; i < pc.n; i += 256u) acc += D[pc.dOffset + i] * Y[o + i];
  red[tid] = acc;
  barrier();
  for (uint k = 128u; k > 0u; k >>= 1) { if (tid < k) red[tid] += red[tid + k]; barrier(); }
  float dot = red[0];
  for (uint i = tid; i < pc.n; i += 256u) Y[o + i] -= pc.s * D[pc.dOffset + i] * dot;
}
