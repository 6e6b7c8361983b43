#version 450
// grid_sync: a probe for a persistent decode kernel (#17). One dispatch of nWG workgroups that
// checks that they are all resident at once (grid.glsl), then runs `rounds` device-wide barriers
// with a dependent step between them, so that scripts/experiments/grid-sync/bench.ts can time a barrier
// against a dispatch level and check that the writes of one round are seen in the next.
// DATA: two halves of nWG values; round r reads half r % 2 (the value of the next workgroup),
// writes its own in the other half plus one, so after R rounds every value is R exactly when
// every round saw the last round's writes.
layout(local_size_x = 256) in;
layout(std430, binding = 0) coherent volatile buffer CB { uint CTL[]; };
layout(std430, binding = 1) coherent buffer DB { uint DATA[]; };
layout(push_constant) uniform PC { uint nWG; uint rounds; uint spinLimit; uint pad; } pc;
#include "grid.glsl"

void main() {
  uint wg = gl_WorkGroupID.x;
  if (!gridStart()) return;
  for (uint r = 0u; r < pc.rounds; r++) {
    if (gl_LocalInvocationID.x == 0u) {
      uint src = (r % 2u) * pc.nWG, dst = ((r + 1u) % 2u) * pc.nWG;
      DATA[dst + wg] = DATA[src + (wg + 1u) % pc.nWG] + 1u;
    }
    if (!gridBarrier(r)) return;
  }
}
