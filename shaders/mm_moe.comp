#version 450
// mm_moe: tiled matmul of the routed experts over tokens grouped by expert (moe_tiles.comp),
// 64 weight rows × 32 (token, expert) pairs per workgroup. See mm.glsl.
#define NT 128u
#define BN 32u
#define MOE
#include "mm.glsl"
