#version 450
// mm: tiled prefill matmul, 64 weight rows × 64 activation rows per workgroup. See mm.glsl.
#define NT 256u
#define BN 64u
#include "mm.glsl"
