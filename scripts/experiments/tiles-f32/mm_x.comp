#version 450
// EXPERIMENT: mm.glsl with NT, BN, TM (and MOE) given on the command line (build.sh)
#include "mm.glsl"
