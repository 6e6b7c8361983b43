#version 450
// attn_softmax: in-place softmax of one score row (positions 0..pos+t). Workgroup (t, h) of 256
// threads, shared-memory max and sum reductions. Dispatch: (T, nHead, 1).
layout(local_size_x = 256) in;
layout(std430, binding = 0) buffer SB { float S[]; };
layout(std430, binding = 1) readonly buffer PB { uint PARAMS[]; };
layout(push_constant) uniform PC { uint nHead; uint ctx; } pc;
shared float red[256];
void main() {
  uint t = gl_WorkGroupID.x, h = gl_WorkGroupID.y, tid = gl_LocalInvocationID.x;
  uint p = PARAMS[0] + t;
  uint row = (t * pc.nHead + h) * pc.ctx;
  float mx = -3.0e38;
  for (uint u = tid; u <= p; u += 256u) mx = max(mx, S[row + u]);
  red[tid] = mx;
  barrier();
  for (uint s = 128u; s > 0u; s >>= 1) { if (tid < s) red[tid] = max(red[tid], red[tid + s]); barrier(); }
  mx = red[0];
  barrier();
  float sum = 0.0;
  for (uint u = tid; u <= p; u += 256u) { float e = exp(S[row + u] - mx); S[row + u] = e; sum += e; }
  red[tid] = sum;
  barrier();
  for (uint s = 128u; s > 0u; s >>= 1) { if (tid < s) red[tid] += red[tid + s]; barrier(); }
  float inv = 1.0 / red[0];
  for (uint u = tid; u <= p; u += 256u) S[row + u] *= inv;
}
