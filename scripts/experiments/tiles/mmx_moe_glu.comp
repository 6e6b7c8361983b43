#version 450
// EXPERIMENT: mmc_moe_glu (32 pairs) with one set of raw loads
#extension GL_KHR_cooperative_matrix : require
#define NT 256u
#define BN 32u
#define MOE
#define SPLIT
#define GLU
#define SETS 1u
#define RAW_LOADS
#include "mmc.glsl"
