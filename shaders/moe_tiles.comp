#version 450
// moe_tiles: groups a prefill chunk's (token, expert) pairs by expert for mm_moe (a counting sort):
// LIST holds the pair indices token·K + k expert by expert, and TILES[1 + i] = (expert, first
// LIST entry, count ≤ BN, 0) cuts each expert's run into tiles of at most BN pairs; TILES[0].x is
// the number of tiles. Within an expert the order of pairs is whatever the atomics give: mm_moe's
// result for a pair does not depend on its slot (mm.glsl), so the output is deterministic.
// Thread mapping: one workgroup of 1024 threads; counts and offsets in shared memory (nExpert ≤
// 1024, checked by the engine); the prefix sums by one thread (≤ 1024 steps, once per layer).
// Dispatch: (1, 1, 1).
layout(local_size_x = 1024) in;
layout(std430, binding = 0) readonly buffer IB { uint IDS[]; };
layout(std430, binding = 1) writeonly buffer LB { uint LIST[]; };
layout(std430, binding = 2) writeonly buffer TB { uvec4 TILES[]; };
layout(push_constant) uniform PC { uint nPairs; uint nExpert; uint BN; uint pad; } pc;
shared uint cnt[1024];
shared uint off[1024];
shared uint tileOff[1024];

void main() {
  uint tid = gl_LocalInvocationID.x;
  for (uint e = tid; e < pc.nExpert; e += 1024u) cnt[e] = 0u;
  barrier();
  for (uint p = tid; p < pc.nPairs; p += 1024u) atomicAdd(cnt[IDS[p]], 1u);
  barrier();
  if (tid == 0u) {
    uint o = 0u, to = 0u;
    for (uint e = 0u; e < pc.nExpert; e++) {
      off[e] = o; tileOff[e] = to;
      o += cnt[e]; to += (cnt[e] + pc.BN - 1u) / pc.BN;
    }
    TILES[0] = uvec4(to, 0u, 0u, 0u);
  }
  barrier();
  for (uint e = tid; e < pc.nExpert; e += 1024u) {
    uint c = cnt[e];
    for (uint i = 0u; i * pc.BN < c; i++) TILES[1u + tileOff[e] + i] = uvec4(e, off[e] + i * pc.BN, min(pc.BN, c - i * pc.BN), 0u);
    cnt[e] = 0u;  // reused as the fill position below (each expert's own thread, no race)
  }
  barrier();
  for (uint p = tid; p < pc.nPairs; p += 1024u) {
    uint e = IDS[p];
    LIST[off[e] + atomicAdd(cnt[e], 1u)] = p;
  }
}
