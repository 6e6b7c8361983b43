#version 450
// copy: dst = src, 16 bytes per invocation and step (grid-stride). A session goes back to a draft
// step's accepted row with it (its recurrent states from their checkpoints); scripts/bench/bench-matvec-bw
// measures the device's copy bandwidth with it.
// Dispatch: (groups) with n4 = the uvec4 count.
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer SB { uvec4 SRC[]; };
layout(std430, binding = 1) writeonly buffer DB { uvec4 DST[]; };
layout(push_constant) uniform PC { uint n4; } pc;
void main() {
  uint stride = gl_NumWorkGroups.x * 256u;
  for (uint i = gl_GlobalInvocationID.x; i < pc.n4; i += stride) DST[i] = SRC[i];
}
