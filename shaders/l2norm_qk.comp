#version 450
// l2norm_qk: DeltaNet q and k heads x ← x / sqrt(Σx² + 1e-6) (q also × 1/sqrt(dk)), in place in U.
// Workgroup (t, head of 2·hk): heads [0, hk) are q, [hk, 2hk) are k. Dispatch: (T, 2·hk, 1).
layout(local_size_x = 256) in;
layout(std430, binding = 0) buffer UB { float U[]; };
layout(push_constant) uniform PC { uint convCh; uint dk; uint hk; float qScale; } pc;
shared float red[256];
void main() {
  uint t = gl_WorkGroupID.x, h = gl_WorkGroupID.y, d = gl_LocalInvocationID.x;
  uint o = t * pc.convCh + h * pc.dk;
  float x = d < pc.dk ? U[o + d] : 0.0;
  red[d] = x * x;
  barrier();
  for (uint s = 128u; s > 0u; s >>= 1) { if (d < s) red[d] += red[d + s]; barrier(); }
  float r = inversesqrt(red[0] + 1e-6) * (h < pc.hk ? pc.qScale : 1.0);
  if (d < pc.dk) U[o + d] = x * r;
}
