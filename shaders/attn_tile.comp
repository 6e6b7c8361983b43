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
// cache type. Shared memory 27904 bytes; hd a multiple of 32, ≤ 256 (checked by the engine).
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
const uint VK = 8u;   // V rows per staging step of O (staged in qk4's space)
const uint PS = BC + 1u;

// Q and K dim slices, dim-major: qk4[dd·16 + i] holds rows (or keys) 4i … 4i+3 of dim dd, so a
// thread reads its 4 rows and its 4 keys as two vec4 loads per dim (shared-memory bandwidth, not
// the FMAs, bounded the scalar layout)
// Then, for O, V rows: VK · hd floats in the same space (value i at qk4[i / 4][i % 4])
shared vec4 qk4[2u * DK * 16u];
shared float ps[R * PS];          // scores, then probabilities
shared float red[256];            // softmax partial max / sum, 4 threads per row
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
  // what this thread stages, fixed for the whole block (G and hd are not constants: their
  // divisions are done once here, not per load): Q/K slice elements (row or key tid/16 + 16e,
  // dim tid%16), V elements (row i / hd, dim i % hd of i = tid + 256e)
  uint qOff[4], vRow[8], vDim[8];
  [[unroll]] for (uint e = 0u; e < 8u; e++) {
    uint i = tid + 256u * e;
    vRow[e] = i < VK * hd ? i / hd : 0xffffu;
    vDim[e] = i < VK * hd ? kvh * hd + i % hd : 0u;
  }
  [[unroll]] for (uint e = 0u; e < 4u; e++) {
    uint r = (tid >> 4u) + 16u * e;
    qOff[e] = r < rows ? (pc.t0 + tok0 + r / G) * pc.qStride + (kvh * G + r % G) * 2u * hd + (tid & 15u) : 0xffffffffu;
  }
  for (uint kt = u0; kt < uEnd; kt += BC) {
    uint nk = min(BC, uEnd - kt);
    float acc[4][4];
    [[unroll]] for (uint a = 0u; a < 4u; a++) [[unroll]] for (uint c = 0u; c < 4u; c++) acc[a][c] = 0.0;
    // the next dim slice's Q and K values are loaded into registers while the current one is
    // multiplied (a load → barrier → multiply sequence waited out a memory latency per slice)
    float qn[4], kn[4];
    [[unroll]] for (uint e = 0u; e < 4u; e++) {
      uint r = (tid >> 4u) + 16u * e;
      qn[e] = qOff[e] != 0xffffffffu ? QG[qOff[e]] : 0.0;
      kn[e] = r < nk ? k_get((kt + r) * pc.kRowBytes, kvh * hd + (tid & 15u)) : 0.0;
    }
    for (uint d0 = 0u; d0 < hd; d0 += DK) {
      barrier();
      [[unroll]] for (uint e = 0u; e < 4u; e++) {
        uint r = (tid >> 4u) + 16u * e, dd = tid & 15u;
        qk4[dd * 16u + (r >> 2u)][r & 3u] = qn[e];
        qk4[DK * 16u + dd * 16u + (r >> 2u)][r & 3u] = kn[e];
      }
      barrier();
      if (d0 + DK < hd) {
        [[unroll]] for (uint e = 0u; e < 4u; e++) {
          uint r = (tid >> 4u) + 16u * e;
          qn[e] = qOff[e] != 0xffffffffu ? QG[qOff[e] + d0 + DK] : 0.0;
          kn[e] = r < nk ? k_get((kt + r) * pc.kRowBytes, kvh * hd + d0 + DK + (tid & 15u)) : 0.0;
        }
      }
      [[unroll]] for (uint dd = 0u; dd < DK; dd++) {
        vec4 qv = qk4[dd * 16u + sy], kv = qk4[DK * 16u + dd * 16u + sx];
        [[unroll]] for (uint a = 0u; a < 4u; a++) [[unroll]] for (uint c = 0u; c < 4u; c++) acc[a][c] += qv[a] * kv[c];
      }
    }
    [[unroll]] for (uint a = 0u; a < 4u; a++) [[unroll]] for (uint c = 0u; c < 4u; c++) ps[(sy * 4u + a) * PS + sx * 4u + c] = acc[a][c] * pc.scale;
    barrier();
    // online softmax, 4 threads per row (16 keys each): keys past the row's position (or the
    // tile) count as −∞
    {
      uint r = tid >> 2u, j0 = (tid & 3u) * 16u;
      uint lim = r < rows ? min(nk, rowPos[r] + 1u - min(rowPos[r] + 1u, kt)) : 0u;
      float mOld = rowM[r], m = mOld;
      for (uint j = j0; j < min(lim, j0 + 16u); j++) m = max(m, ps[r * PS + j]);
      red[tid] = m;
      barrier();
      m = max(max(red[r * 4u], red[r * 4u + 1u]), max(red[r * 4u + 2u], red[r * 4u + 3u]));
      float l = 0.0;
      [[unroll]] for (uint j = j0; j < j0 + 16u; j++) {
        float e = j < lim ? exp(ps[r * PS + j] - m) : 0.0;
        ps[r * PS + j] = e;
        l += e;
      }
      barrier();
      red[tid] = l;
      barrier();
      if ((tid & 3u) == 0u) {
        float alpha = exp(mOld - m);
        rowL[r] = rowL[r] * alpha + (red[tid] + red[tid + 1u]) + (red[tid + 2u] + red[tid + 3u]);
        rowM[r] = m;
        rowA[r] = alpha;
      }
      barrier();
    }
    [[unroll]] for (uint i = 0u; i < 8u; i++) {
      float a = rowA[ry * 8u + i];
      [[unroll]] for (uint j = 0u; j < 8u; j++) o[i][j] *= a;
    }
    // V rows likewise: the next VK rows load while the current ones are accumulated
    float vn[8];
    [[unroll]] for (uint e = 0u; e < 8u; e++) vn[e] = vRow[e] < nk ? v_get((kt + vRow[e]) * pc.vRowBytes, vDim[e]) : 0.0;
    for (uint j0 = 0u; j0 < nk; j0 += VK) {
      barrier();
      [[unroll]] for (uint e = 0u; e < 8u; e++) if (vRow[e] != 0xffffu) qk4[(tid >> 2u) + 64u * e][tid & 3u] = vn[e];
      barrier();
      if (j0 + VK < nk) {
        [[unroll]] for (uint e = 0u; e < 8u; e++) vn[e] = j0 + VK + vRow[e] < nk ? v_get((kt + j0 + VK + vRow[e]) * pc.vRowBytes, vDim[e]) : 0.0;
      }
      [[unroll]] for (uint jj = 0u; jj < VK; jj++) {
        float v[8];
        [[unroll]] for (uint j = 0u; j < 8u; j++) v[j] = j < nd ? qk4[((jj * hd + dx) >> 2u) + 8u * j][dx & 3u] : 0.0;
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
