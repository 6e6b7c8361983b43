#version 450
// mmc_moe_glu: mmc_moe for routed gate+up (flag 4): 64 gate rows and their up rows a tile, 64
// outputs silu(gate)·up × 32 (token, expert) pairs per workgroup (MMC_MOE_PAIRS). See mmc.glsl.
#extension GL_KHR_cooperative_matrix : require
#define NT 256u
#define BN 32u
#define MOE
#define SPLIT
#define GLU
// a span's row scales applied to each element by its index (mmc.glsl, IDX_SCALES)
#ifndef IDX_SCALES
#define IDX_SCALES
#endif
#define SETS 2u
#define RAW_LOADS
#include "mmc.glsl"
