#version 450
// mvq2: 2 activation rows a workgroup (batched decode steps' dense products: each row summed as
// mvq.comp sums it). See mvq.glsl.
#define TOKENS_N 2
#include "mvq.glsl"
