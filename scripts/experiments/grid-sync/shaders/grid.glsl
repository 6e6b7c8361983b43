// Device-wide steps for a persistent kernel (#17): grid_sync.comp and grid_chain.comp include
// this. Vulkan says nothing of how many workgroups run at once, so the kernel checks it itself:
// each workgroup arrives on a counter and waits (boundedly) for all the others; one that gives up
// raises CTL[1] and leaves, and so does every workgroup that sees it raised, at any wait — the
// dispatch always ends, and CTL[1] tells the host it cannot run persistently at this size.
// Needs before the include: CTL (a `coherent volatile` uint buffer, zeroed by the host: [0]
// arrivals, [1] failed, [2] barrier arrivals, monotonic: barrier r is passed at (r + 1)·nWG) and
// push fields pc.nWG (the workgroups dispatched) and pc.spinLimit (< 65535).

// thread 0 only; the flag is written by thread 0 and read by all after a workgroup barrier. Two
// slots, alternating: slot r & 1 is next written at barrier r + 2, after every thread has passed
// barrier r + 1 and so finished reading it — one workgroup barrier a step instead of two.
shared uint gridOk[2];  // 1: go on, 0: give up (uint: scripts/lib/spirv-reflect.mjs sizes no bools)

// thread 0: wait until CTL[i] ≥ target, or the failed flag, or the poll limit (then raise it).
// Plain (volatile) loads: polling with atomic read-modify-writes serialises every workgroup on
// the counter's cache line (H200, 2026-12-03: 1.8 / 3.6 / 8.5 / 18.3 µs a barrier at 132 / 264 /
// 528 / 1056 workgroups polling with atomics, 1.7 / 2.5 / 4.1 / 7.3 with loads). A counted loop:
// lavapipe cuts any loop at 65535 trips and falls through, so spinLimit stays below that and
// giving up is the loop's own end.
bool gridWait(uint i, uint target) {
  for (uint spins = 0u; spins < pc.spinLimit; spins++) {
    if (CTL[1] != 0u) return false;  // another gave up: no round may run
    if (CTL[i] >= target) return true;
  }
  atomicExchange(CTL[1], 1u);
  return false;
}

// every thread: whether all pc.nWG workgroups are running at once (if not, return at once)
bool gridStart() {
  if (gl_LocalInvocationID.x == 0u) {
    atomicAdd(CTL[0], 1u);
    gridOk[1] = gridWait(0u, pc.nWG) ? 1u : 0u;
  }
  barrier();
  return gridOk[1] != 0u;
}

// every thread: device-wide barrier number r (0, 1, …): every buffer write of every thread before
// it is seen by every thread after it. False where another workgroup gave up (then return).
bool gridBarrier(uint r) {
  memoryBarrierBuffer();
  barrier();
  if (gl_LocalInvocationID.x == 0u) {
    atomicAdd(CTL[2], 1u);
    gridOk[r & 1u] = gridWait(2u, (r + 1u) * pc.nWG) ? 1u : 0u;
    memoryBarrierBuffer();
  }
  barrier();
  return gridOk[r & 1u] != 0u;
}
