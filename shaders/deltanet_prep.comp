#version 450
// deltanet_prep: the parts of deltanet_chunk's blocks that do not depend on the state, for every
// block of the chunk at once (one workgroup per block of C = 16 tokens and value head), so that
// deltanet_chunk's walk over the blocks, one after the other, holds only the state's work: per
// block and head, into DBK (DB_LEN floats at (block · hv + h) · DB_LEN):
//   G[C]   the log decay so far within the block (G_t = Σ_{u≤t} g_u, g ≤ 0)
//   bt[C]  β_t
//   nrm[2C] the L2 norms' factors of the block's k rows, then of its q rows (× 1/√dk for q)
//   Tm[C][C] (I + A)⁻¹, A_ts = β_t e^{G_t−G_s} (k_t·k_s) for s < t (else 0): lower triangular with
//            a unit diagonal, so that the walk's δ = Tm · r (r_t = β_t (v_t − e^{G_t} S₀ᵀk_t)) is C
//            independent sums instead of a substitution of C steps, one after the other, in every lane
//   QK[C][C] e^{G_t−G_s} (q_t·k_s) for s ≤ t
// (k and q normed). Tm's columns come by forward substitution, one thread a column (off the walk's
// path: every block at once). Dispatch: (⌈T / C⌉, hv). dk ≤ 128, a multiple of 4.
#extension GL_GOOGLE_include_directive : enable
#extension GL_KHR_shader_subgroup_shuffle : enable
#include "common.glsl"
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer UB { float U[]; };
layout(std430, binding = 1) readonly buffer BB { float Bt[]; };
layout(std430, binding = 2) readonly buffer AB { float AL[]; };
layout(std430, binding = 3) readonly buffer DB { float DT[]; };
layout(std430, binding = 4) readonly buffer EB { float A[]; };
layout(std430, binding = 5) writeonly buffer KB { float DBK[]; };
layout(push_constant) uniform PC { uint T; uint dk; uint hk; uint hv; uint convCh; float eps; float qScale; uint pad2; } pc;
#include "deltanet_block.glsl"

shared vec4 Ks[C * KP];
shared vec4 Qs[C * KP];
shared float G[C];
shared float bt[C];
shared float nrm[2u * C];
shared float Am[C][C];

void main() {
  uint blk = gl_WorkGroupID.x, h = gl_WorkGroupID.y, tid = gl_LocalInvocationID.x, p = tid & 7u;
  uint dk = pc.dk, kh = h % pc.hk, dk4 = dk / 4u, t0 = blk * C;
  uint n = min(C, pc.T - t0);
  uint at = (blk * pc.hv + h) * DB_LEN;
  // this block's raw q and k (zero past the chunk's end and past dk)
  for (uint e = tid; e < C * 32u; e += 256u) {
    uint t = e >> 5, i4 = e & 31u;
    bool on = t < n && i4 < dk4;
    uint ub = (t0 + t) * pc.convCh + 4u * i4;
    uint kb = ub + pc.hk * dk + kh * dk, qb = ub + kh * dk;
    Ks[t * KP + i4] = on ? vec4(U[kb], U[kb + 1u], U[kb + 2u], U[kb + 3u]) : vec4(0.0);
    Qs[t * KP + i4] = on ? vec4(U[qb], U[qb + 1u], U[qb + 2u], U[qb + 3u]) : vec4(0.0);
  }
  if (tid < C) {
    bool on = tid < n;
    G[tid] = on ? A[h] * softplusf(AL[(t0 + tid) * pc.hv + h] + DT[h]) : 0.0;
    bt[tid] = on ? sigmoidf(Bt[(t0 + tid) * pc.hv + h]) : 0.0;
  }
  barrier();
  // L2 norms: row r (k rows, then q rows) by 8 lanes of 4 vec4s each
  {
    uint r = tid >> 3, t = r % C;
    float ss = 0.0;
    [[unroll]] for (uint u = 0u; u < 4u; u++) { vec4 x = r < C ? Ks[t * KP + 4u * p + u] : Qs[t * KP + 4u * p + u]; ss += dot(x, x); }
    ss = sum8(ss);
    if (p == 0u) nrm[r] = inversesqrt(ss + 1e-6) * (r < C ? 1.0 : pc.qScale);
  }
  if (tid == 255u) { float g = 0.0; for (uint t = 0u; t < C; t++) { g += G[t]; G[t] = g; } }
  barrier();
  for (uint e = tid; e < C * 32u; e += 256u) {
    uint t = e >> 5;
    Ks[e + t * (KP - 32u)] *= nrm[t];
    Qs[e + t * (KP - 32u)] *= nrm[C + t];
  }
  barrier();
  // A (strictly lower) and QK (lower, diagonal included), decays folded in: one entry per thread
  {
    uint t = tid / C, s = tid % C;
    float a = 0.0, b = 0.0;
    if (s <= t) {
      for (uint u = 0u; u < dk4; u++) { vec4 ks = Ks[s * KP + u]; a += dot(Ks[t * KP + u], ks); b += dot(Qs[t * KP + u], ks); }
      float d = exp(G[t] - G[s]);
      a *= d; b *= d;
    }
    Am[t][s] = s < t ? bt[t] * a : 0.0;
    DBK[at + DB_QK + tid] = b;
  }
  barrier();
  // column c of (I + A)⁻¹: x_c = 1, x_t = −Σ_{c≤s<t} A_ts x_s (t > c); 0 above the diagonal
  if (tid < C) {
    uint c = tid;
    float x[C];
    [[unroll]] for (uint t = 0u; t < C; t++) {
      float v = t == c ? 1.0 : 0.0;
      [[unroll]] for (uint s = 0u; s < t; s++) if (s >= c) v -= Am[t][s] * x[s];
      x[t] = v;
      DBK[at + DB_TM + t * C + c] = v;
    }
  }
  if (tid < C) { DBK[at + DB_G + tid] = G[tid]; DBK[at + DB_BT + tid] = bt[tid]; }
  if (tid < 2u * C) DBK[at + DB_NRM + tid] = nrm[tid];
}
