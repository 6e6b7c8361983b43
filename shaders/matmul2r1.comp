#version 450
// matmul2r1: 2 activation rows per workgroup as matmul2, 1 output row per workgroup
// instead of 4 (a few rows of a draft or batched step over a short matrix: more workgroups keep
// more loads in flight, as matvec1 does for one row; a row's sums are the same). See matvec.glsl.
#define TOKENS_N 2
#define ROWS_N 1u
#include "matvec.glsl"
