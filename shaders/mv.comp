#version 450
// mv: one activation row by 32-weight units (mv.glsl; one body for every weight type).
#include "mv.glsl"
