#version 450
// ssm_conv: causal depthwise conv (width 4: 3 history + current) over the T tokens of a chunk, then
// SiLU, in place on U (T × convCh); the history (pre-conv inputs, oldest first) is updated.
// Thread per channel; tokens in order. Dispatch: ceil(convCh/256).
#extension GL_GOOGLE_include_directive : enable
#include "common.glsl"
layout(local_size_x = 256) in;
layout(std430, binding = 0) buffer UB { float U[]; };
layout(std430, binding = 1) readonly buffer CB { float CW[]; };
layout(std430, binding = 2) buffer HB { float HIST[]; };
layout(push_constant) uniform PC { uint convCh; uint T; uint width; uint pad; } pc;
void main() {
  uint c = gl_GlobalInvocationID.x;
  if (c >= pc.convCh) return;
  uint w = pc.width, hn = w - 1u;
  for (uint t = 0u; t < pc.T; t++) {
    float x = U[t * pc.convCh + c];
    float acc = CW[c * w + hn] * x;
    for (uint i = 0u; i < hn; i++) acc += CW[c * w + i] * HIST[c * hn + i];
    for (uint i = 0u; i + 1u < hn; i++) HIST[c * hn + i] = HIST[c * hn + i + 1u];
    HIST[c * hn + hn - 1u] = x;
    U[t * pc.convCh + c] = siluf(acc);
  }
}
