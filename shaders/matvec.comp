#version 450
// matvec: one activation row per workgroup (decode, routed experts). See matvec.glsl.
#define TOKENS_N 1
#include "matvec.glsl"
