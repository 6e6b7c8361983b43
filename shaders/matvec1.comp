#version 450
// matvec1: one activation row, one output row per workgroup (decode: 4× the workgroups of matvec,
// so a short matrix still keeps every SM's loads in flight). No GLU (it needs 2). See matvec.glsl.
#define TOKENS_N 1
#define ROWS_N 1u
#include "matvec.glsl"
