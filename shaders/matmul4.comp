#version 450
// matmul4: 4 activation rows per workgroup share each decoded weight group (batched decode
// steps of 3-4 sessions, and of 5-8 for Q8_0 as two workgroups: graph.ts SPLIT8_TYPES; the 8-row
// matmul would compute 4-5 copies of the last row of 3-4). See matvec.glsl.
#define TOKENS_N 4
#include "matvec.glsl"
