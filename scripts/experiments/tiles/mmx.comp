#version 450
// EXPERIMENT: dense mmc (128-row tiles) with raw loads two steps ahead
#extension GL_KHR_cooperative_matrix : require
#define NT 256u
#define BN 64u
#define BM_ROWS 128u
#define SETS 2u
#define RAW_LOADS
#define SPLIT
#include "mmc.glsl"
