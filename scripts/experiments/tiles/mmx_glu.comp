#version 450
// EXPERIMENT: dense mmc_glu with 128 gate rows (and their up rows) a tile
#extension GL_KHR_cooperative_matrix : require
#define NT 256u
#define BN 64u
#define BM_ROWS 128u
#define OVERDISPATCH
#define SPLIT
#define GLU
#include "mmc.glsl"
