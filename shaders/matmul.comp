#version 450
// matmul: eight activation rows per workgroup share each decoded weight group (prefill). See matvec.glsl.
#define TOKENS_N 8
#include "matvec.glsl"
