#version 450
// subgroup_probe: what the device's subgroups really are, run once when the engine opens a device.
// The kernels size their loops by gl_SubgroupSize and assume lanes are consecutive invocations
// (attn_flash's shuffle-xor groups, the router's lane-strided experts, per-subgroup slots indexed
// by gl_SubgroupID); a driver whose subgroups do not match what it reports would make them compute
// something else without any error (lavapipe above a 512-bit vector width reports 32 or 64 lanes
// and runs 16). Each invocation writes what it sees; ts/engine/vulkan/subgroup-probe.ts checks it.
// Dispatch: 1 workgroup of 256.
#extension GL_KHR_shader_subgroup_arithmetic : enable
#extension GL_KHR_shader_subgroup_shuffle : enable
layout(local_size_x = 256) in;
layout(std430, binding = 0) writeonly buffer OB { uvec4 O[]; };

void main() {
  uint i = gl_LocalInvocationIndex;
  O[i] = uvec4(subgroupAdd(1u), gl_SubgroupInvocationID | (gl_SubgroupSize << 16u),
               gl_SubgroupID | (gl_NumSubgroups << 16u), subgroupShuffleXor(i, 1u));
}
