#version 450
// deltanet_chunk: the gated delta rule of deltanet.comp for a prefill chunk, in the chunked form:
// C = 16 tokens at a time with one state read and one state update per block instead of per token
// (token by token, a 512-token chunk waited out ~2500 barriers per layer).
// Within a block of tokens 1…C after state S₀ (G_t = Σ_{u≤t} g_u, the log decay so far; all g ≤ 0):
//   δ_t = β_t (v_t − e^{G_t} S₀ᵀk_t) − Σ_{s<t} A_ts δ_s,   A_ts = β_t e^{G_t−G_s} (k_t·k_s)
//   o_t = e^{G_t} S₀ᵀq_t + Σ_{s≤t} e^{G_t−G_s} (q_t·k_s) δ_s
//   S_C = e^{G_C} S₀ + Σ_s e^{G_C−G_s} k_s δ_sᵀ
// (unrolling S_t = e^{g_t} S_{t−1} + k_t δ_tᵀ, δ_t = β_t (v_t − (e^{g_t} S_{t−1})ᵀk_t): the same
// values as the recurrence up to rounding; the triangular system for δ is solved by forward
// substitution, each value column on its own).
// Thread mapping: 512 threads, thread (j, p) = 4j + p owns value column j and key rows i = 4m + p
// (m < 32) of the state, in registers for the whole chunk; the four row parts of a column are
// adjacent lanes, so S₀ᵀk and S₀ᵀq are summed with subgroup shuffles (no barrier); the four
// lanes then all compute the column's δ and o. Per block: q, k (L2-normed, q × 1/√dk) staged in
// shared memory (rows padded to 129 floats: the C×C dot products read across rows), the block's
// A and QK matrices (one thread per entry), then the column work; the gated output norm
// o ← rms(o)·w·silu(z) sums o² per token over the head through shared memory.
// Dispatch: (hv, 1, 1). dk ≤ 128; the subgroup size is a multiple of 4.
#extension GL_GOOGLE_include_directive : enable
#extension GL_KHR_shader_subgroup_arithmetic : enable
#extension GL_KHR_shader_subgroup_shuffle : enable
#include "common.glsl"
layout(local_size_x = 512) in;
layout(std430, binding = 0) readonly buffer UB { float U[]; };
layout(std430, binding = 1) readonly buffer BB { float Bt[]; };
layout(std430, binding = 2) readonly buffer AB { float AL[]; };
layout(std430, binding = 3) readonly buffer DB { float DT[]; };
layout(std430, binding = 4) readonly buffer EB { float A[]; };
layout(std430, binding = 5) buffer SB { float S[]; };
layout(std430, binding = 6) writeonly buffer OB { float O[]; };
layout(std430, binding = 7) readonly buffer ZB { float Z[]; };
layout(std430, binding = 8) readonly buffer NB { float NW[]; };
layout(push_constant) uniform PC { uint T; uint dk; uint hk; uint hv; uint convCh; float eps; float qScale; uint pad2; } pc;

const uint C = 16u, KP = 129u;
shared float Ks[C * KP];
shared float Qs[C * KP];
shared float Am[C][C];
shared float QK[C][C];
shared float G[C];
shared float bt[C];
shared float nrm[2u * C];
shared float red[C][64];  // per-token sums of o² per subgroup (≤ 64 subgroups)

// the sum over a column's four lanes (4j … 4j + 3): butterfly shuffles (clustered adds are not
// available everywhere: lavapipe lacks them)
float sum4(float x) {
  x += subgroupShuffleXor(x, 1u);
  return x + subgroupShuffleXor(x, 2u);
}

float softplusf(float x) { return x > 20.0 ? x : log(1.0 + exp(x)); }

void main() {
  uint h = gl_WorkGroupID.x, tid = gl_LocalInvocationID.x;
  uint p = tid & 3u, j = tid >> 2;
  uint dk = pc.dk, kh = h % pc.hk;
  bool colOn = j < dk;
  float col[32];
  [[unroll]] for (uint m = 0u; m < 32u; m++) {
    uint i = 4u * m + p;
    col[m] = colOn && i < dk ? S[(h * dk + i) * dk + j] : 0.0;
  }
  for (uint t0 = 0u; t0 < pc.T; t0 += C) {
    uint n = min(C, pc.T - t0);
    // stage this block's raw q and k (zero past the chunk's end)
    for (uint e = tid; e < C * 128u; e += 512u) {
      uint t = e >> 7, i = e & 127u;
      bool on = t < n && i < dk;
      uint ub = (t0 + t) * pc.convCh;
      Ks[t * KP + i] = on ? U[ub + pc.hk * dk + kh * dk + i] : 0.0;
      Qs[t * KP + i] = on ? U[ub + kh * dk + i] : 0.0;
    }
    if (tid < C) {
      bool on = tid < n;
      G[tid] = on ? A[h] * softplusf(AL[(t0 + tid) * pc.hv + h] + DT[h]) : 0.0;
      bt[tid] = on ? sigmoidf(Bt[(t0 + tid) * pc.hv + h]) : 0.0;
    }
    barrier();
    // the L2 norms of the C k rows and C q rows (one thread each), and G as a running sum
    if (tid < 2u * C) {
      uint t = tid % C;
      float ss = 0.0;
      if (tid < C) { for (uint i = 0u; i < dk; i++) ss += Ks[t * KP + i] * Ks[t * KP + i]; nrm[tid] = inversesqrt(ss + 1e-6); }
      else { for (uint i = 0u; i < dk; i++) ss += Qs[t * KP + i] * Qs[t * KP + i]; nrm[tid] = inversesqrt(ss + 1e-6) * pc.qScale; }
    }
    if (tid == 2u * C) { float g = 0.0; for (uint t = 0u; t < C; t++) { g += G[t]; G[t] = g; } }
    barrier();
    for (uint e = tid; e < C * 128u; e += 512u) {
      uint t = e >> 7, i = e & 127u;
      Ks[t * KP + i] *= nrm[t];
      Qs[t * KP + i] *= nrm[C + t];
    }
    barrier();
    // A (strictly lower) and QK (lower, diagonal included), decays folded in: one entry per thread
    {
      uint e = tid & 255u, t = e / C, s = e % C;
      bool isA = tid < 256u;
      float d = 0.0;
      if (isA ? s < t : s <= t) {
        for (uint i = 0u; i < dk; i++) d += (isA ? Ks[t * KP + i] : Qs[t * KP + i]) * Ks[s * KP + i];
        d *= exp(G[t] - G[s]);
      }
      if (isA) Am[t][s] = bt[t] * d; else QK[t][s] = d;
    }
    barrier();
    // S₀ᵀk_t and S₀ᵀq_t for column j: this lane's rows, then the column's four lanes summed
    float kS[C], o[C];
    [[unroll]] for (uint t = 0u; t < C; t++) {
      float a = 0.0, b = 0.0;
      [[unroll]] for (uint m = 0u; m < 32u; m++) {
        uint i = 4u * m + p;
        a += col[m] * Ks[t * KP + i];
        b += col[m] * Qs[t * KP + i];
      }
      kS[t] = sum4(a);
      o[t] = sum4(b) * exp(G[t]);
    }
    // δ by forward substitution (kept in kS), then the outputs
    float dl[C];
    [[unroll]] for (uint t = 0u; t < C; t++) {
      float v = colOn && t < n ? U[(t0 + t) * pc.convCh + 2u * pc.hk * dk + h * dk + j] : 0.0;
      float d = bt[t] * (v - exp(G[t]) * kS[t]);
      [[unroll]] for (uint s = 0u; s < t; s++) d -= Am[t][s] * dl[s];
      dl[t] = d;
    }
    [[unroll]] for (uint t = 0u; t < C; t++) {
      [[unroll]] for (uint s = 0u; s <= t; s++) o[t] += QK[t][s] * dl[s];
    }
    // the state at the block's end
    float gEnd = G[C - 1u];
    [[unroll]] for (uint s = 0u; s < C; s++) dl[s] *= exp(gEnd - G[s]);
    float dEnd = exp(gEnd);
    [[unroll]] for (uint m = 0u; m < 32u; m++) {
      uint i = 4u * m + p;
      float x = col[m] * dEnd;
      [[unroll]] for (uint s = 0u; s < C; s++) x += Ks[s * KP + i] * dl[s];
      col[m] = x;
    }
    // gated norm over the head's dk outputs of each token: o² summed by subgroups, then across them
    [[unroll]] for (uint t = 0u; t < C; t++) {
      float v = subgroupAdd(p == 0u && colOn ? o[t] * o[t] : 0.0);
      if (subgroupElect()) red[t][gl_SubgroupID] = v;
    }
    barrier();
    if (p == 0u && colOn) {
      [[unroll]] for (uint t = 0u; t < C; t++) {
        if (t >= n) break;
        float tot = 0.0;
        for (uint sg = 0u; sg < gl_NumSubgroups; sg++) tot += red[t][sg];
        uint oo = (t0 + t) * pc.hv * dk + h * dk + j;
        O[oo] = o[t] * inversesqrt(tot / float(dk) + pc.eps) * NW[j] * siluf(Z[oo]);
      }
    }
    barrier();  // Ks, Qs, red are rewritten by the next block
  }
  [[unroll]] for (uint m = 0u; m < 32u; m++) {
    uint i = 4u * m + p;
    if (colOn && i < dk) S[(h * dk + i) * dk + j] = col[m];
  }
}
