#version 450
// matmul2: 2 activation rows per workgroup share each decoded weight group (batched decode
// steps of 2 sessions; the 8-row matmul would compute 6 copies of the last row). See matvec.glsl.
#define TOKENS_N 2
#include "matvec.glsl"
