#version 450
// mmc_glu: mmc for a GLU weight (flag 4): 64 gate rows and their up rows a tile, 64 outputs
// silu(gate)·up × 64 activation rows per workgroup. See mmc.glsl.
#extension GL_KHR_cooperative_matrix : require
#define NT 256u
#define BN 64u
#define SPLIT
#define GLU
// a span's row scales applied to each element by its index (mmc.glsl, IDX_SCALES)
#ifndef IDX_SCALES
#define IDX_SCALES
#endif
#include "mmc.glsl"
