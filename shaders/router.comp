#version 450
// router: per token, softmax over the expert logits, top-k (ties: lowest id), renormalised
// weights (router.glsl: one subgroup per token, no barriers; the workgroup version's ~20 barriers
// made it a 12 µs step of every layer's critical path). Decode runs it inside the router matvec
// instead (matvec_router.comp); this is the prefill form. Dispatch: (T, 1, 1).
#extension GL_GOOGLE_include_directive : enable
#extension GL_KHR_shader_subgroup_arithmetic : enable
#extension GL_EXT_control_flow_attributes : enable
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer RB { float R[]; };
layout(std430, binding = 1) writeonly buffer IB { uint IDS[]; };
layout(std430, binding = 2) buffer WB { float WTS[]; };
layout(push_constant) uniform PC { uint nExpert; uint K; } pc;
#define ROUTER_LOGIT(e) R[gl_WorkGroupID.x * pc.nExpert + (e)]
#define OUT_IDS IDS
#define OUT_WTS WTS
#include "router.glsl"
void main() {
  route(gl_WorkGroupID.x, pc.nExpert, pc.K);
}
