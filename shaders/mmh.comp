#version 450
// mmh: mm with packed f16 products, 64 weight rows × 64 activation rows per workgroup. See mmh.glsl.
#define NT 256u
#define BN 64u
#include "mmh.glsl"
