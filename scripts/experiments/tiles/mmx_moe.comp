#version 450
// EXPERIMENT: mmc_moe with 128-row tiles (32 pairs)
#extension GL_KHR_cooperative_matrix : require
#define NT 256u
#define BN 32u
#define BM_ROWS 128u
#define OVERDISPATCH
#define MOE
#define SPLIT
#include "mmc.glsl"
