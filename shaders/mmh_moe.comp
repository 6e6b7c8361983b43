#version 450
// mmh_moe: mm_moe with packed f16 products, 64 weight rows × 32 (token, expert) pairs per
// workgroup. See mmh.glsl.
#define NT 128u
#define BN 32u
#define MOE
#include "mmh.glsl"
