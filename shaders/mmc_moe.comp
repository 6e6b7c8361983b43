#version 450
// mmc_moe: mm_moe.comp on the matrix units (cooperative matrices), 64 weight rows × 64 (token,
// expert) pairs per workgroup (graph.ts MMC_MOE_PAIRS says why twice mm_moe's). See mmc.glsl.
#extension GL_KHR_cooperative_matrix : require
#define NT 256u
#define BN 64u
#define MOE
#define SPLIT
#include "mmc.glsl"
