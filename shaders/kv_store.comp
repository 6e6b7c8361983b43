#version 450
// kv_store: quantizes token t's K row (y = 0) or V row (y = 1) into the cache at position pos+t,
// with the reference quantizers (Q8_0: d = amax/127, q = roundf(x/d); Q4_0: d = max/−8,
// q = min(15, trunc(x/d + 8.5))). One invocation per row: rows are short and blocks share words.
// Dispatch: (T, 2, 1).
#extension GL_GOOGLE_include_directive : enable
#include "common.glsl"
layout(local_size_x = 1) in;
layout(std430, binding = 0) readonly buffer KB { float K[]; };
layout(std430, binding = 1) readonly buffer VB { float V[]; };
layout(std430, binding = 2) buffer KCB { uint KC[]; };
layout(std430, binding = 3) buffer VCB { uint VC[]; };
layout(std430, binding = 4) readonly buffer PB { uint PARAMS[]; };
layout(push_constant) uniform PC { uint kvDim; uint rowBytes; } pc;

void put_byte(bool isK, uint off, uint v) {
  uint w = off >> 2, sh = (off & 3u) * 8u;
  if (isK) KC[w] = (KC[w] & ~(0xFFu << sh)) | ((v & 0xFFu) << sh);
  else VC[w] = (VC[w] & ~(0xFFu << sh)) | ((v & 0xFFu) << sh);
}
void put_half(bool isK, uint off, float v) {
  uint h = packHalf2x16(vec2(v, 0.0)) & 0xFFFFu;
  put_byte(isK, off, h & 0xFFu);
  put_byte(isK, off + 1u, h >> 8);
}
float src(bool isK, uint i) { return isK ? K[i] : V[i]; }

void main() {
  uint t = gl_WorkGroupID.x;
  bool isK = gl_WorkGroupID.y == 0u;
  uint base = t * pc.kvDim;
  uint ro = (PARAMS[0] + t) * pc.rowBytes;
#if defined(KV_F32)
  for (uint i = 0u; i < pc.kvDim; i++) { if (isK) KC[(ro >> 2) + i] = floatBitsToUint(K[base + i]); else VC[(ro >> 2) + i] = floatBitsToUint(V[base + i]); }
#elif defined(KV_F16)
  for (uint i = 0u; i < pc.kvDim; i += 2u) {
    uint w = packHalf2x16(vec2(src(isK, base + i), src(isK, base + i + 1u)));
    if (isK) KC[(ro >> 2) + i / 2u] = w; else VC[(ro >> 2) + i / 2u] = w;
  }
#elif defined(KV_Q8_0)
  for (uint b = 0u; b < pc.kvDim / 32u; b++) {
    float amax = 0.0;
    for (uint j = 0u; j < 32u; j++) amax = max(amax, abs(src(isK, base + 32u * b + j)));
    float d = amax / 127.0;
    float id = d != 0.0 ? 1.0 / d : 0.0;
    uint o = ro + 34u * b;
    put_half(isK, o, d);
    for (uint j = 0u; j < 32u; j++) {
      float x = src(isK, base + 32u * b + j) * id;
      float r = sign(x) * floor(abs(x) + 0.5);
      put_byte(isK, o + 2u + j, uint(int(r)) & 0xFFu);
    }
  }
#elif defined(KV_Q4_0)
  for (uint b = 0u; b < pc.kvDim / 32u; b++) {
    float amax = 0.0, mx = 0.0;
    for (uint j = 0u; j < 32u; j++) { float v = src(isK, base + 32u * b + j); if (abs(v) > amax) { amax = abs(v); mx = v; } }
    float d = mx / -8.0;
    float id = d != 0.0 ? 1.0 / d : 0.0;
    uint o = ro + 18u * b;
    put_half(isK, o, d);
    for (uint j = 0u; j < 16u; j++) {
      uint q0 = min(15u, uint(int(src(isK, base + 32u * b + j) * id + 8.5)));
      uint q1 = min(15u, uint(int(src(isK, base + 32u * b + 16u + j) * id + 8.5)));
      put_byte(isK, o + 2u + j, q0 | (q1 << 4));
    }
  }
#endif
}
