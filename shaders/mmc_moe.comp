#version 450
// mmc_moe: mm_moe.comp on the matrix units (cooperative matrices), 64 weight rows × 32 (token,
// expert) pairs per workgroup (graph.ts MMC_MOE_PAIRS: 32 took 15-43% less time than 64 on the
// H100, the most at 512 tokens: docs/vulkan.md). See mmc.glsl.
#extension GL_KHR_cooperative_matrix : require
#define NT 256u
#define BN 32u
#define MOE
#define SPLIT
#include "mmc.glsl"
