#version 450
// attn_scores: causal scores softmax(q_h · k_u / sqrt(hd)) for u ≤ pos+t, one row per (token, head).
// Thread mapping: workgroup (t, h) of 256 threads striding over key positions u; the query head is
//   staged in shared memory; max and sum reductions in shared memory. GQA: kv head = h / (nHead/nHeadKv).
// Dispatch: (T, nHead, 1). Variant per K cache type.
#extension GL_GOOGLE_include_directive : enable
#include "common.glsl"
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer QB { float QG[]; };
layout(std430, binding = 1) readonly buffer KB { uint KC[]; };
layout(std430, binding = 2) buffer SB { float S[]; };
layout(std430, binding = 3) readonly buffer PB { uint PARAMS[]; };
layout(push_constant) uniform PC { uint nHead; uint nHeadKv; uint hd; uint ctx; uint kRowBytes; uint qStride; float scale; uint pad; } pc;
#define KVBUF KC
#include "kv.glsl"
shared float q[256];
shared float red[256];

void main() {
  uint t = gl_WorkGroupID.x, h = gl_WorkGroupID.y, tid = gl_LocalInvocationID.x;
  uint p = PARAMS[0] + t;
  uint kvh = h / (pc.nHead / pc.nHeadKv);
  if (tid < pc.hd) q[tid] = QG[t * pc.qStride + h * 2u * pc.hd + tid];
  barrier();
  uint row = (t * pc.nHead + h) * pc.ctx;
  float mx = -3.0e38;
  for (uint u = tid; u <= p; u += 256u) {
    float s = 0.0;
    uint ro = u * pc.kRowBytes;
    for (uint d = 0u; d < pc.hd; d++) s += q[d] * kv_get_(ro, kvh * pc.hd + d);
    s *= pc.scale;
    S[row + u] = s;
    mx = max(mx, s);
  }
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
