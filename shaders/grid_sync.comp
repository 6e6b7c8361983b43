#version 450
// grid_sync: a probe for a persistent decode kernel (#17). One dispatch of nWG workgroups that
// first checks that they are all resident at once, then runs `rounds` device-wide barriers with a
// dependent step between them, so that scripts/bench-grid-sync.ts can time a barrier through
// atomics against a dispatch level and check that the writes of one round are seen in the next.
// Vulkan says nothing of how many workgroups run at once, so the check is made here: each
// workgroup arrives on a counter and waits (boundedly) for all the others; one that gives up
// raises CTL[1] and leaves, and so does every workgroup that sees it raised, at any wait — the
// dispatch always ends, and CTL[1] tells the host the kernel cannot run persistently on this
// device at this size. Every wait is bounded by spinLimit polls (< 65535).
// CTL (zeroed by the host): [0] arrivals, [1] failed, [2] barrier arrivals (monotonic: round r is
// passed at (r + 1)·nWG). DATA: two halves of nWG values; round r reads half r % 2 (the value of
// the next workgroup), writes its own in the other half plus one, so after R rounds every value
// is R exactly when every round saw the last round's writes.
layout(local_size_x = 256) in;
layout(std430, binding = 0) coherent buffer CB { uint CTL[]; };
layout(std430, binding = 1) coherent buffer DB { uint DATA[]; };
layout(push_constant) uniform PC { uint nWG; uint rounds; uint spinLimit; uint pad; } pc;
shared bool ok;

// thread 0: wait until CTL[i] ≥ target, or the failed flag, or the poll limit (then raise it)
// (a counted loop: lavapipe cuts any loop at 65535 trips and falls through, so spinLimit stays
// below that and the give-up path is the loop's own end)
bool waitFor(uint i, uint target) {
  for (uint spins = 0u; spins < pc.spinLimit; spins++) {
    if (atomicAdd(CTL[1], 0u) != 0u) return false;  // another gave up: no round may run
    if (atomicAdd(CTL[i], 0u) >= target) return true;
  }
  atomicExchange(CTL[1], 1u);
  return false;
}

void main() {
  uint wg = gl_WorkGroupID.x, tid = gl_LocalInvocationID.x;
  if (tid == 0u) {
    atomicAdd(CTL[0], 1u);
    ok = waitFor(0u, pc.nWG);
  }
  barrier();
  // read into a register, then a second barrier, so thread 0's next write of ok races no read
  bool go = ok;
  barrier();
  if (!go) return;
  for (uint r = 0u; r < pc.rounds; r++) {
    if (tid == 0u) {
      uint src = (r % 2u) * pc.nWG, dst = ((r + 1u) % 2u) * pc.nWG;
      DATA[dst + wg] = DATA[src + (wg + 1u) % pc.nWG] + 1u;
      memoryBarrierBuffer();
      atomicAdd(CTL[2], 1u);
      ok = waitFor(2u, (r + 1u) * pc.nWG);
      memoryBarrierBuffer();
    }
    barrier();
    go = ok;
    barrier();
    if (!go) return;
  }
}
