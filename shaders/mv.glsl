// mv: one activation row times a weight, by units of 32 weights (unit.glsl): the decode step's
// matvecs and routed experts (any number of (token, expert) pairs: a batched step has 8 rows × 8).
// A row of n values has n/32 units; L = min(64, n/32 rounded up to a power of two) threads share a
// row (thread `lane` takes units lane, lane + L, …), so a 64-thread workgroup works on S = 64/L
// row slots at once and each thread on R rows of its slot (pc.aux: 1, 2, 4 or 8; a GLU takes R/2 gate
// rows and their R/2 up rows). A thread loads its unit's 32 activations once for its R rows.
// A row's sum depends only on n and the device's subgroup size, never on R, S or the dispatch:
// each lane sums its units in order, the lanes are summed in a fixed order (subgroupAdd over
// whole subgroups where L allows, else in shared memory), so a batched step's rows get the bits
// of the same rows decoded alone.
// Push: matvec_push.glsl's block (flags: bit 0 expert gather, bit 1 X row = j, bit 2 GLU; e0/ne the
// experts in this binding); dispatch (ceil(outputs / (S·R or S·R/2)), activation rows).
#extension GL_GOOGLE_include_directive : enable
#extension GL_KHR_shader_subgroup_arithmetic : enable
#extension GL_KHR_shader_subgroup_basic : enable
#include "common.glsl"

layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer WB { uint W[]; };
layout(std430, binding = 1) readonly buffer XB { vec4 X4[]; };
layout(std430, binding = 2) writeonly buffer YB { float Y[]; };
layout(std430, binding = 3) readonly buffer IB { uint IDS[]; };
layout(std430, binding = 4) readonly buffer GB { uvec2 GRID[]; };
#include "matvec_push.glsl"

#include "decode.glsl"
#include "unit.glsl"

// per thread R ≤ 8 partial sums, one per (lane, row)
shared float red[8u * 64u];

void main() {
  uint tid = gl_LocalInvocationID.x, units = pc.n >> 5;
  uint L = min(64u, 1u << findMSB(2u * units - 1u)), S = 64u / L;
  uint lane = tid % L, slot = tid / L;
  bool glu = (pc.flags & 4u) != 0u;
  uint R = pc.aux, Ro = glu ? R >> 1 : R;
  uint out0 = (gl_WorkGroupID.x * S + slot) * Ro, j = gl_WorkGroupID.y;
  uint wbase = pc.wOffset, xrow = j;
  if ((pc.flags & 1u) != 0u) {
    // uniform per workgroup (one activation row), so returning before barrier() is allowed
    uint ei = IDS[j] - pc.e0;
    if (ei >= pc.ne) return;
    wbase += ei * pc.expertBytes;
    if ((pc.flags & 2u) == 0u) xrow = j / pc.K;
  }
  uint xo = (pc.xOffset + xrow * pc.xStride) >> 2;
  uint wo[8];
  [[unroll]] for (uint r = 0u; r < 8u; r++) {
    uint rr = r < Ro ? r : r - Ro;
    wo[r] = wbase + min(out0 + rr, pc.rows - 1u) * pc.rowBytes + (glu && r >= Ro ? pc.upBytes : 0u);
  }
  float acc[8] = float[8](0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0);
  for (uint u = lane; u < units; u += L) {
    float x[32], xs[4];
    [[unroll]] for (uint k = 0u; k < 4u; k++) {
      uint q = xo + (unitRun(u, k) >> 2);
      vec4 a = X4[q], b = X4[q + 1u];
      x[8u * k] = a.x; x[8u * k + 1u] = a.y; x[8u * k + 2u] = a.z; x[8u * k + 3u] = a.w;
      x[8u * k + 4u] = b.x; x[8u * k + 5u] = b.y; x[8u * k + 6u] = b.z; x[8u * k + 7u] = b.w;
#if defined(DECODE_MIN)
      xs[k] = ((a.x + a.y) + (a.z + a.w)) + ((b.x + b.y) + (b.z + b.w));
#else
      xs[k] = 0.0;
#endif
    }
    [[unroll]] for (uint r = 0u; r < 8u; r++) if (r < R) acc[r] += unitDot(wo[r], u, x, xs);
  }
  // lanes → rows: subgroup sums where a row is whole subgroups, then the partials in order
  uint sg = gl_SubgroupSize, parts = L;
  if (L >= sg) {
    [[unroll]] for (uint r = 0u; r < 8u; r++) if (r < R) acc[r] = subgroupAdd(acc[r]);
    parts = L / sg;
    if (subgroupElect()) [[unroll]] for (uint r = 0u; r < 8u; r++) if (r < R) red[(slot * R + r) * parts + lane / sg] = acc[r];
  } else {
    [[unroll]] for (uint r = 0u; r < 8u; r++) if (r < R) red[(slot * R + r) * L + lane] = acc[r];
  }
  barrier();
  uint nOut = S * Ro;
  if (tid < nOut) {
    uint s = tid / Ro, r = tid % Ro, o = (gl_WorkGroupID.x * S + s) * Ro + r;
    float y = 0.0, yu = 0.0;
    for (uint p = 0u; p < parts; p++) y += red[(s * R + r) * parts + p];
    if (glu) {
      for (uint p = 0u; p < parts; p++) yu += red[(s * R + Ro + r) * parts + p];
      y = siluf(y) * yu;
    }
    if (o < pc.rows) Y[pc.yOffset + j * pc.yStride + o] = y;
  }
}
