#version 450
// attn_merge: o_h = Σ_b e^(m_b − M) P_b / Σ_b e^(m_b − M) l_b over the blocks attn_flash wrote
// (M = max m_b; blocks past pos + t were not written and are skipped), times the sigmoid output
// gate (the second half of the head's q slice). Dispatch: (tokens, nHead, 1) for tokens t0 … (as
// attn_flash); attn_merge_rows: (rows, nHead, 1) (rows.glsl). hd ≤ 256. The blocks are attn_flash's
// (attn_span.glsl, the same push blk and grow).
// Thread mapping: 1024 threads = NS block slices × 256 dimensions; thread (s, d) sums blocks
// s, s + NS, … of dimension d, 8 blocks' loads per trip, and the slices meet in shared memory in a
// fixed order. A 32K-context decode has 512 blocks per head: one thread per dimension walking them
// all (the earlier form) waited out ~128 dependent load rounds on the step's critical path, ten
// times a step; with 4 slices and 8 blocks per trip it is 16. M is found by all threads at once.
#extension GL_GOOGLE_include_directive : enable
#extension GL_KHR_shader_subgroup_arithmetic : enable
#include "common.glsl"
#include "rows.glsl"
#include "attn_span.glsl"
layout(local_size_x = 1024) in;
const uint NT = 1024u, NS = 4u, DW = 256u, U = 8u;
#define ROW ROW_AT(gl_WorkGroupID.x)
layout(std430, binding = 0) readonly buffer PPB { float P[]; };
layout(std430, binding = 1) readonly buffer MLB { vec2 ML[]; };
layout(std430, binding = 2) readonly buffer QB { float QG[]; };
layout(std430, binding = 3) writeonly buffer OB { float O[]; };
layout(std430, binding = 4) readonly buffer PB { uint PARAMS_[]; } pb_r[BATCH];
#define PARAMS pb_r[ROW].PARAMS_
layout(push_constant) uniform PC { uint nHead; uint hd; uint nBlk; uint qStride; uint blk; uint t0; uint grow; uint pad2; } pc;
shared float red[NT];
shared float po[NS][DW];
shared float pd[NS];
void main() {
  uint tl = gl_WorkGroupID.x, t = pc.t0 + tl, h = gl_WorkGroupID.y, tid = gl_LocalInvocationID.x;
  uint d = tid % DW, s = tid / DW;
  uint p = POS(t);
  uint used = p / attnSpan(p, pc.blk, pc.grow) + 1u, base = (tl * pc.nHead + h) * pc.nBlk;
  // M over all used blocks: every thread a stride of them, then subgroups, then the workgroup
  float m = -3.0e38;
  for (uint b = tid; b < used; b += NT) m = max(m, ML[base + b].x);
  m = subgroupMax(m);
  if (subgroupElect()) red[gl_SubgroupID] = m;
  barrier();
  float M = -3.0e38;
  for (uint sg = 0u; sg < gl_NumSubgroups; sg++) M = max(M, red[sg]);
  // this slice's blocks: s, s + NS, …; U of them per trip, their loads issued together
  float o = 0.0, den = 0.0;
  bool on = d < pc.hd;
  uint b = s;
  for (; b + NS * (U - 1u) < used; b += NS * U) {
    vec2 ml[U];
    float pv[U];
    [[unroll]] for (uint j = 0u; j < U; j++) { uint bj = base + b + NS * j; ml[j] = ML[bj]; pv[j] = on ? P[bj * pc.hd + d] : 0.0; }
    [[unroll]] for (uint j = 0u; j < U; j++) { float w = exp(ml[j].x - M); o += w * pv[j]; den += w * ml[j].y; }
  }
  for (; b < used; b += NS) {
    vec2 ml = ML[base + b];
    float w = exp(ml.x - M);
    o += w * (on ? P[(base + b) * pc.hd + d] : 0.0);
    den += w * ml.y;
  }
  po[s][d] = o;
  if (d == 0u) pd[s] = den;
  barrier();
  if (s == 0u && on) {
    float ot = 0.0, dt = 0.0;
    [[unroll]] for (uint k = 0u; k < NS; k++) { ot += po[k][d]; dt += pd[k]; }
    float g = QG[t * pc.qStride + h * 2u * pc.hd + pc.hd + d];
    O[(t * pc.nHead + h) * pc.hd + d] = ot / dt * sigmoidf(g);
  }
}
