#version 450
// mvq4: 4 activation rows a workgroup (batched decode steps' dense products: each row summed as
// mvq.comp sums it). See mvq.glsl.
#define TOKENS_N 4
#include "mvq.glsl"
