#version 450
// attn_decode: the operands attn_mmc stages, decoded once instead of for every 64-key tile of
// every query tile. part 0 (once a layer, after kv_store): the K cache as f16 (a q8_0 or q4_0
// cache's integers with one f32 scale per key and 32 dims; an f16 cache's values, scale 1) and the
// V cache as two f16 halves, keys 0 … the step's last; part 1 (once a dispatch pair): Q's rows
// split into two f16 halves, grouped by KV head. Layouts (ts/engine/vulkan/attn-decoded.ts):
//   QD: row ((kvh·nTok + t)·G + g) of hd halves (hi), the lo halves (nTok·nHead + 64)·hd halves on;
//   KD: key p's kvDim halves at p·kvDim, its kvDim / 32 scales as f32 from word kScales on;
//   VD: key p's hi halves at p·kvDim, its lo halves (times 2048) from word vLo on.
// hi is a value's first 11 significant bits (by mask: exact in f16 across its normal range), lo
// the rest times 2048, as attn_tile's values split on the matrix units (docs/vulkan.md). Grid:
// workgroups (x, y) cover items (y·x_count + x)·256 + thread, 4 elements an item; items past the
// keys the step has return at once (the grid covers the context: a recorded step serves every depth).
#extension GL_GOOGLE_include_directive : enable
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#include "common.glsl"
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer QB { vec4 QG4[]; };
layout(std430, binding = 1) readonly buffer KB { uint KC[]; };
layout(std430, binding = 2) readonly buffer VB { uint VC[]; };
layout(std430, binding = 3) writeonly buffer QDB { uvec2 QD[]; };
layout(std430, binding = 4) writeonly buffer KDB { uvec2 KD[]; };
layout(std430, binding = 4) writeonly buffer KDFB { float KDF[]; };
layout(std430, binding = 5) writeonly buffer VDB { uvec2 VD2[]; };
layout(std430, binding = 6) readonly buffer PB { uint PARAMS[]; };
layout(push_constant) uniform PC {
  uint nHead; uint nHeadKv; uint hd; uint kRowBytes;
  uint vRowBytes; uint qStride; uint nTok; uint t0;
  uint kScales; uint vLo; uint part; uint pad;
} pc;
#if KT < 1
#error "attn_decode: a q8_0, q4_0 or f16 K (an f32 K is not exact in f16: its layers keep attn_tile)"
#endif
#define KV_FN4 k_get4
#define KV_FN4Q k_get4q
#define KVBUF KC
#define KV_T KT
#include "kv.glsl"
#undef KV_FN4
#undef KV_FN4Q
#undef KVBUF
#undef KV_T
#define KV_FN4 v_get4
#define KVBUF VC
#define KV_T VT
#include "kv.glsl"

const float LO = 2048.0;
uvec2 pack4(vec4 v) { return uvec2(packFloat2x16(f16vec2(v.xy)), packFloat2x16(f16vec2(v.zw))); }
vec4 hiOf(vec4 v) { return uintBitsToFloat(floatBitsToUint(v) & 0xFFFFE000u); }

void main() {
  uint i = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * 256u + gl_LocalInvocationID.x;
  uint hd = pc.hd, kvDim = pc.nHeadKv * hd;
  if (pc.part == 0u) {
    uint p = i / (kvDim / 4u), d = (i % (kvDim / 4u)) * 4u;
    if (p >= PARAMS[0] + pc.t0 + pc.nTok) return;
    float s;
    vec4 k = k_get4q(p * pc.kRowBytes, d, s);
    vec4 v = v_get4(p * pc.vRowBytes, d), vh = hiOf(v);
    uint w = (p * kvDim + d) / 4u;
    KD[w] = pack4(k);
    if (d % 32u == 0u) KDF[pc.kScales + p * (kvDim / 32u) + d / 32u] = s;
    VD2[w] = pack4(vh);
    VD2[pc.vLo / 2u + w] = pack4((v - vh) * LO);
  } else {
    uint G = pc.nHead / pc.nHeadKv, t = i / (pc.nHead * hd / 4u), h = (i / (hd / 4u)) % pc.nHead, d = (i % (hd / 4u)) * 4u;
    if (t >= pc.nTok) return;
    vec4 q = QG4[((pc.t0 + t) * pc.qStride + h * 2u * hd + d) / 4u], qh = hiOf(q);
    uint row = ((h / G) * pc.nTok + t) * G + h % G, w = (row * hd + d) / 4u;
    QD[w] = pack4(qh);
    QD[(pc.nTok * pc.nHead + 64u) * hd / 4u + w] = pack4((q - qh) * LO);
  }
}
