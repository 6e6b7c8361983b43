#version 450
// mmc: mm.comp on the matrix units (cooperative matrices), 64 weight rows × 64 activation rows per
// workgroup. See mmc.glsl.
#extension GL_KHR_cooperative_matrix : require
#define NT 256u
#define BN 64u
#define SPLIT
#include "mmc.glsl"
