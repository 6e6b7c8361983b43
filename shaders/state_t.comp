#version 450
// state_t: transposes each dk × dk DeltaNet state block from SRC to DST: DST[h][b][a] = SRC[h][a][b]
// (between the GPU's key-row-major layout and the session payload's value-column-major one, its
// own inverse), so snapshots and payloads move as plain copies instead of a host-side transpose
// (~0.1 s per full-model snapshot in JS). 32 × 32 tiles through shared memory, both sides
// coalesced. Dispatch: (⌈dk / 32⌉, ⌈dk / 32⌉, heads); 256 threads.
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer SB { float SRC[]; };
layout(std430, binding = 1) writeonly buffer DB { float DST[]; };
layout(push_constant) uniform PC { uint dk; uint pad0; uint pad1; uint pad2; } pc;
shared float tile[32][33];
void main() {
  uint dk = pc.dk, h = gl_WorkGroupID.z, base = h * dk * dk;
  uint a0 = gl_WorkGroupID.y * 32u, b0 = gl_WorkGroupID.x * 32u;
  uint x = gl_LocalInvocationID.x & 31u, y = gl_LocalInvocationID.x >> 5;
  for (uint r = y; r < 32u; r += 8u) if (a0 + r < dk && b0 + x < dk) tile[r][x] = SRC[base + (a0 + r) * dk + b0 + x];
  barrier();
  for (uint r = y; r < 32u; r += 8u) if (b0 + r < dk && a0 + x < dk) DST[base + (b0 + r) * dk + a0 + x] = tile[x][r];
}
