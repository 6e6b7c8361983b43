#version 450
// matmul4r2: 4 activation rows per workgroup as matmul4, 2 output rows per workgroup
// instead of 4 (a few rows of a draft or batched step over a short matrix: more workgroups keep
// more loads in flight, as matvec2 does for one row; a row's sums are the same). See matvec.glsl.
#define TOKENS_N 4
#define ROWS_N 2u
#include "matvec.glsl"
