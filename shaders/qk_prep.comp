#version 450
// qk_prep: per-head RMSNorm (q_norm / k_norm weights, already 1+w) then NeoX RoPE on the first nRot
// dims, in place: q heads inside the [query | gate] slices of QG, k heads in K.
// RoPE cos/sin come from a host table computed in f64 (ROPE[pos·nRot/2 + i] = (cos, sin)).
// Thread mapping: workgroup (t, slot), slot < nHead: q head, else k head; thread = dimension.
// Dispatch: (T, nHead + nHeadKv, 1); qk_prep_rows: (rows, nHead + nHeadKv, 1) (rows.glsl).
#extension GL_GOOGLE_include_directive : enable
#include "common.glsl"
#include "rows.glsl"
layout(local_size_x = 256) in;
#define ROW ROW_AT(gl_WorkGroupID.x)
layout(std430, binding = 0) buffer QB { float QG[]; };
layout(std430, binding = 1) buffer KB { float K[]; };
layout(std430, binding = 2) readonly buffer QNB { float QN[]; };
layout(std430, binding = 3) readonly buffer KNB { float KN[]; };
layout(std430, binding = 4) readonly buffer RB { vec2 ROPE[]; };
layout(std430, binding = 5) readonly buffer PB { uint PARAMS_[]; } pb_r[BATCH];
#define PARAMS pb_r[ROW].PARAMS_
layout(push_constant) uniform PC { uint nHead; uint nHeadKv; uint hd; uint nRot; uint qStride; uint kStride; float eps; uint pad; } pc;
shared float v[256];
shared float red[256];

void main() {
  uint t = gl_WorkGroupID.x, slot = gl_WorkGroupID.y, d = gl_LocalInvocationID.x;
  bool isQ = slot < pc.nHead;
  uint base = isQ ? t * pc.qStride + slot * 2u * pc.hd : t * pc.kStride + (slot - pc.nHead) * pc.hd;
  float x = 0.0;
  if (d < pc.hd) x = isQ ? QG[base + d] : K[base + d];
  red[d] = x * x;
  barrier();
  for (uint s = 128u; s > 0u; s >>= 1) { if (d < s) red[d] += red[d + s]; barrier(); }
  float r = inversesqrt(red[0] / float(pc.hd) + pc.eps);
  if (d < pc.hd) v[d] = x * r * (isQ ? QN[d] : KN[d]);
  barrier();
  if (d < pc.hd) {
    float y = v[d];
    uint half_ = pc.nRot / 2u;
    uint p = POS(t);
    if (d < half_) { vec2 cs = ROPE[p * half_ + d]; y = v[d] * cs.x - v[d + half_] * cs.y; }
    else if (d < pc.nRot) { vec2 cs = ROPE[p * half_ + d - half_]; y = v[d] * cs.x + v[d - half_] * cs.y; }
    if (isQ) QG[base + d] = y; else K[base + d] = y;
  }
}
