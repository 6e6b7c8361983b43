#version 450
// matvec2: one activation row, two output rows per workgroup (decode; GLU: one gate and its up
// row). See matvec.glsl.
#define TOKENS_N 1
#define ROWS_N 2u
#include "matvec.glsl"
