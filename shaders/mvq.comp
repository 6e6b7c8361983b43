#version 450
// mvq: one activation row a workgroup as int8 levels (decode steps' products over a norm's output
// or the routed SwiGLU; routed experts in batched steps too). See mvq.glsl.
#define TOKENS_N 1
#include "mvq.glsl"
