#version 450
// attn_tile: prefill attention for a tile of query rows — tq consecutive tokens × the G query
// heads of one KV head (tq·G ≤ 64 rows) — over one block of key positions, as two small matrix
// products per tile of 64 keys: S = Q·Kᵀ (64 × 64, register-blocked 4 × 4 per thread, dims
// staged 16 at a time in shared memory) and O += softmax(S)·V (8 rows × 8 dims per thread, V rows
// staged 8 at a time), with the online softmax between them (running max m and sum l per row).
// Each K and V element is read once per tile of tokens instead of once per token (attn_flash),
// and no subgroup reductions are needed, so it is subgroup-size agnostic.
// Output: the same partials as attn_flash (P = Σ e^(s−m) v per row and block, ML = (m, l)), so
// attn_merge combines the blocks unchanged. Rows whose token lies before the block are written
// with l = 0 and never read (attn_merge only reads blocks up to the token's position).
// Dispatch: (⌈nTok / tq⌉, nHeadKv, nBlk) for the chunk's tokens t0 … t0+nTok−1. Variant per K × V
// cache type. Shared memory 26.4 KB; hd a multiple of 32, ≤ 256 (checked by the engine).
#extension GL_GOOGLE_include_directive : enable
#include "common.glsl"
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer QB { float QG[]; };
layout(std430, binding = 1) readonly buffer KB { uint KC[]; };
layout(std430, binding = 2) readonly buffer VB { uint VC[]; };
layout(std430, binding = 3) writeonly buffer PPB { float P[]; };
layout(std430, binding = 4) writeonly buffer MLB { vec2 ML[]; };
layout(std430, binding = 5) readonly buffer PB { uint PARAMS[]; };
layout(push_constant) uniform PC {
  uint nHead; uint nHeadKv; uint hd; uint kRowBytes;
  uint vRowBytes; uint qStride; float scale; uint nBlk;
  uint blk; uint t0; uint nTok; uint tq;
} pc;
#define KV_FN k_get
#define KVBUF KC
#define KV_T KT
#include "kv.glsl"
#undef KV_FN
#undef KVBUF
#undef KV_T
#define KV_FN v_get
#define KVBUF VC
#define KV_T VT
#include "kv.glsl"

const uint R = 64u;   // query rows per workgroup
const uint BC = 64u;  // keys per tile
const uint DK = 16u;  // dims per staging step of S
const uint SQ = DK + 1u;
const uint VK = 8u;   // V rows per staging step of O
const uint PS = BC + 1u;

shared float stage[2u * R * SQ];  // Q and K dim slices, then V rows (VK · hd ≤ 2048 floats)
shared float ps[R * PS];          // scores, then probabilities
shared float rowM[R];
shared float rowL[R];
shared float rowA[R];
shared uint rowPos[R];            // the row's token position (its last visible key); 0 for padding

void main() {
  uint tile = gl_WorkGroupID.x, kvh = gl_WorkGroupID.y, b = gl_WorkGroupID.z, tid = gl_LocalInvocationID.x;
  uint G = pc.nHead / pc.nHeadKv, hd = pc.hd, tq = pc.tq;
  uint tok0 = tile * tq;                         // first token of the tile, within the dispatch
  uint ntk = min(tq, pc.nTok - tok0);            // tokens in this tile
  uint base = PARAMS[0] + pc.t0;                 // position of the dispatch's first token
  uint u0 = b * pc.blk;
  uint pLast = base + tok0 + ntk - 1u;
  if (u0 > pLast) return;                        // the block is in every row's future
  uint uEnd = min(u0 + pc.blk, pLast + 1u);
  uint rows = ntk * G;
  if (tid < R) {
    rowM[tid] = -3.0e38;
    rowL[tid] = 0.0;
    rowPos[tid] = tid < rows ? base + tok0 + tid / G : 0u;
  }
  // O accumulators: rows ry·8 … ry·8+7, dims dx + 32·j
  uint ry = tid >> 5u, dx = tid & 31u, nd = hd >> 5u;
  float o[8][8];
  [[unroll]] for (uint i = 0u; i < 8u; i++) [[unroll]] for (uint j = 0u; j < 8u; j++) o[i][j] = 0.0;
  // S accumulators: rows sy·4 … +3, keys sx·4 … +3
  uint sy = tid >> 4u, sx = tid & 15u;
  for (uint kt = u0; kt < uEnd; kt += BC) {
    uint nk = min(BC, uEnd - kt);
    float acc[4][4];
    [[unroll]] for (uint a = 0u; a < 4u; a++) [[unroll]] for (uint c = 0u; c < 4u; c++) acc[a][c] = 0.0;
    for (uint d0 = 0u; d0 < hd; d0 += DK) {
      barrier();
      for (uint i = tid; i < R * DK; i += 256u) {
        uint r = i / DK, dd = i % DK;
        float v = 0.0;
        if (r < rows) v = QG[(pc.t0 + tok0 + r / G) * pc.qStride + (kvh * G + r % G) * 2u * hd + d0 + dd];
        stage[r * SQ + dd] = v;
      }
      for (uint i = tid; i < BC * DK; i += 256u) {
        uint j = i / DK, dd = i % DK;
        stage[R * SQ + j * SQ + dd] = j < nk ? k_get((kt + j) * pc.kRowBytes, kvh * hd + d0 + dd) : 0.0;
      }
      barrier();
      [[unroll]] for (uint dd = 0u; dd < DK; dd++) {
        float qv[4], kv[4];
        [[unroll]] for (uint a = 0u; a < 4u; a++) qv[a] = stage[(sy * 4u + a) * SQ + dd];
        [[unroll]] for (uint c = 0u; c < 4u; c++) kv[c] = stage[R * SQ + (sx * 4u + c) * SQ + dd];
        [[unroll]] for (uint a = 0u; a < 4u; a++) [[unroll]] for (uint c = 0u; c < 4u; c++) acc[a][c] += qv[a] * kv[c];
      }
    }
    [[unroll]] for (uint a = 0u; a < 4u; a++) [[unroll]] for (uint c = 0u; c < 4u; c++) ps[(sy * 4u + a) * PS + sx * 4u + c] = acc[a][c] * pc.scale;
    barrier();
    // online softmax, one thread per row: keys past the row's position (or the tile) count as −∞
    if (tid < R) {
      uint lim = tid < rows ? min(nk, rowPos[tid] + 1u - min(rowPos[tid] + 1u, kt)) : 0u;
      float mOld = rowM[tid], m = mOld;
      for (uint j = 0u; j < lim; j++) m = max(m, ps[tid * PS + j]);
      float alpha = exp(mOld - m), l = rowL[tid] * alpha;
      for (uint j = 0u; j < BC; j++) {
        float e = j < lim ? exp(ps[tid * PS + j] - m) : 0.0;
        ps[tid * PS + j] = e;
        l += e;
      }
      rowM[tid] = m;
      rowL[tid] = l;
      rowA[tid] = alpha;
    }
    barrier();
    [[unroll]] for (uint i = 0u; i < 8u; i++) {
      float a = rowA[ry * 8u + i];
      [[unroll]] for (uint j = 0u; j < 8u; j++) o[i][j] *= a;
    }
    for (uint j0 = 0u; j0 < nk; j0 += VK) {
      barrier();
      for (uint i = tid; i < VK * hd; i += 256u) {
        uint jj = i / hd, d = i % hd;
        stage[i] = j0 + jj < nk ? v_get((kt + j0 + jj) * pc.vRowBytes, kvh * hd + d) : 0.0;
      }
      barrier();
      [[unroll]] for (uint jj = 0u; jj < VK; jj++) {
        float v[8];
        [[unroll]] for (uint j = 0u; j < 8u; j++) v[j] = j < nd ? stage[jj * hd + dx + 32u * j] : 0.0;
        [[unroll]] for (uint i = 0u; i < 8u; i++) {
          float p = ps[(ry * 8u + i) * PS + j0 + jj];
          [[unroll]] for (uint j = 0u; j < 8u; j++) o[i][j] += p * v[j];
        }
      }
    }
  }
  [[unroll]] for (uint i = 0u; i < 8u; i++) {
    uint r = ry * 8u + i;
    if (r < rows) {
      uint slot = ((tok0 + r / G) * pc.nHead + kvh * G + r % G) * pc.nBlk + b;
      [[unroll]] for (uint j = 0u; j < 8u; j++) if (j < nd) P[slot * hd + dx + 32u * j] = o[i][j];
      if (dx == 0u) ML[slot] = vec2(rowM[r], rowL[r]);
    }
  }
}
