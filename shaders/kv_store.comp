#version 450
// kv_store: quantizes token t's K row (or V row, bound in the same slots) into the cache at
// position pos+t with the reference quantizers (Q8_0: d = amax/127, q = roundf(x/d); Q4_0:
// d = max/−8, q = min(15, trunc(x/d + 8.5))). Thread per 32-value block; blocks share bytes of a
// word (34- and 18-byte blocks), so the row is assembled in shared memory with atomicOr and then
// written out word by word. Dispatch: (T, 1, 1); kv_store_rows: (rows, 1, 1) (rows.glsl); kvDim ≤ 2048.
#extension GL_GOOGLE_include_directive : enable
#include "common.glsl"
#include "rows.glsl"
layout(local_size_x = 64) in;
#define ROW ROW_AT(gl_WorkGroupID.x)
layout(std430, binding = 0) readonly buffer KB { float K[]; };
layout(std430, binding = 1) readonly buffer VB { float V[]; };
layout(std430, binding = 2) buffer KCB { uint KC_[]; } kcb_r[BATCH];
#define KC kcb_r[ROW].KC_
layout(std430, binding = 3) buffer VCB { uint VC_[]; } vcb_r[BATCH];
#define VC vcb_r[ROW].VC_
layout(std430, binding = 4) readonly buffer PB { uint PARAMS_[]; } pb_r[BATCH];
#define PARAMS pb_r[ROW].PARAMS_
layout(push_constant) uniform PC { uint kvDim; uint rowBytes; } pc;
shared uint row[2048];

void put_byte(uint off, uint v) { atomicOr(row[off >> 2], (v & 0xFFu) << ((off & 3u) * 8u)); }
void put_half(uint off, float v) { uint h = packHalf2x16(vec2(v, 0.0)) & 0xFFFFu; put_byte(off, h & 0xFFu); put_byte(off + 1u, h >> 8); }

void main() {
  uint t = gl_WorkGroupID.x, tid = gl_LocalInvocationID.x;
  uint base = t * pc.kvDim;
  uint words = pc.rowBytes / 4u;
  uint ro = POS(t) * words;
  for (uint w = tid; w < words; w += 64u) row[w] = 0u;
  barrier();
  for (uint b = tid; b < pc.kvDim / 32u; b += 64u) {
#if KV_T == 0
    for (uint j = 0u; j < 32u; j++) row[32u * b + j] = floatBitsToUint(K[base + 32u * b + j]);
#elif KV_T == 1
    for (uint j = 0u; j < 32u; j += 2u) row[16u * b + j / 2u] = packHalf2x16(vec2(K[base + 32u * b + j], K[base + 32u * b + j + 1u]));
#elif KV_T == 2
    float amax = 0.0;
    for (uint j = 0u; j < 32u; j++) amax = max(amax, abs(K[base + 32u * b + j]));
    float d = amax / 127.0;
    float id = d != 0.0 ? 1.0 / d : 0.0;
    uint o = 34u * b;
    put_half(o, d);
    for (uint j = 0u; j < 32u; j++) {
      float x = K[base + 32u * b + j] * id;
      put_byte(o + 2u + j, uint(int(sign(x) * floor(abs(x) + 0.5))) & 0xFFu);
    }
#elif KV_T == 3
    float amax = 0.0, mx = 0.0;
    for (uint j = 0u; j < 32u; j++) { float v = K[base + 32u * b + j]; if (abs(v) > amax) { amax = abs(v); mx = v; } }
    float d = mx / -8.0;
    float id = d != 0.0 ? 1.0 / d : 0.0;
    uint o = 18u * b;
    put_half(o, d);
    for (uint j = 0u; j < 16u; j++) {
      uint q0 = min(15u, uint(int(K[base + 32u * b + j] * id + 8.5)));
      uint q1 = min(15u, uint(int(K[base + 32u * b + 16u + j] * id + 8.5)));
      put_byte(o + 2u + j, q0 | (q1 << 4));
    }
#endif
  }
  barrier();
  for (uint w = tid; w < words; w += 64u) KC[ro + w] = row[w];
}
