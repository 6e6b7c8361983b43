#version 450
// mmc: mm.comp on the matrix units (cooperative matrices), 128 weight rows × 64 activation rows
// per workgroup (graph.ts MMC_ROWS: each activation tile staged serves 128 rows; 64 took 20-22%
// longer on the H100: docs/vulkan.md). See mmc.glsl.
#extension GL_KHR_cooperative_matrix : require
#define NT 256u
#define BN 64u
#define BM_ROWS 128u
#define SPLIT
#include "mmc.glsl"
