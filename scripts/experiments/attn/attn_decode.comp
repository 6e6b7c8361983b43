#version 450
// attn_decode (#44 experiment): the decode pass attn_mmh's operands would need in a step, written
// on the GPU: Q's rows split into two f16 halves, grouped by KV head; the K cache's values as f16
// integers (q8_0, q4_0) or f16 values (f16 cache, scale 1) with one f32 scale per key and 32
// dims; the V cache's values as two f16 halves (layouts: attn_mmg.comp's header,
// scripts/lib/attn-decoded.ts). Keys from the step's last one + 1 to rowsOut − 1 are written as
// zeros (a tile reads up to 63 keys past the last, and P = 0 times a NaN is a NaN); keys past
// rowsOut are left alone. Workgroups y = 0: K and V, 4 elements a thread; y = 1: Q.
// bench-attn-tile --decode times it and compares it with the host-built buffers.
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
  uint kScales; uint vLo; uint rowsOut; uint pad;
} pc;
#if KT < 1
#error "attn_decode: a q8_0, q4_0 or f16 K (an f32 K is not exact in f16)"
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
  uint i = gl_GlobalInvocationID.x, hd = pc.hd, kvDim = pc.nHeadKv * hd;
  if (gl_WorkGroupID.y == 0u) {
    uint p = i / (kvDim / 4u), d = (i % (kvDim / 4u)) * 4u;
    if (p >= pc.rowsOut) return;
    bool live = p < PARAMS[0] + pc.t0 + pc.nTok;
    float s = 0.0;
    vec4 k = live ? k_get4q(p * pc.kRowBytes, d, s) : vec4(0.0);
    vec4 v = live ? v_get4(p * pc.vRowBytes, d) : vec4(0.0), vh = hiOf(v);
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
