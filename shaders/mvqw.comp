#version 450
// mvqw: mvq.comp with 256-thread workgroups (four sets of rows where mvq has one): the routed
// pairs (graph.ts mvqWide), a quarter of the workgroups, each row summed exactly as mvq sums it.
#define TOKENS_N 1
#define WG_N 256
#include "mvq.glsl"
