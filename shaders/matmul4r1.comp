#version 450
// matmul4r1: 4 activation rows per workgroup as matmul4, 1 output row per workgroup
// instead of 4 (a few rows of a draft or batched step over a short matrix: more workgroups keep
// more loads in flight, as matvec1 does for one row; a row's sums are the same). See matvec.glsl.
#define TOKENS_N 4
#define ROWS_N 1u
#include "matvec.glsl"
