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
// Value columns are independent in this recurrence, so a workgroup takes 32 columns of one head
// (4 workgroups per head at dk = 128: 128 workgroups, not 32). Thread mapping: 256 threads,
// thread (j, p) = 8j + p owns column j and key rows 16p … 16p + 15 of the state, in registers for
// the whole chunk; the 8 row parts of a column are adjacent lanes, summed with subgroup shuffles
// (no barrier; lavapipe lacks clustered adds). Per block: q, k (L2-normed, q × 1/√dk) staged in
// shared memory, read 4 floats at a time; the block's A and QK matrices (one thread per entry);
// then the column work. The output o is written un-normed: its gated norm needs the whole head
// (ssm_gnorm.comp). Dispatch: (hv, ⌈dk / 32⌉, 1). dk ≤ 128, a multiple of 4.
#extension GL_GOOGLE_include_directive : enable
#extension GL_KHR_shader_subgroup_shuffle : enable
#include "common.glsl"
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer UB { float U[]; };
layout(std430, binding = 1) readonly buffer BB { float Bt[]; };
layout(std430, binding = 2) readonly buffer AB { float AL[]; };
layout(std430, binding = 3) readonly buffer DB { float DT[]; };
layout(std430, binding = 4) readonly buffer EB { float A[]; };
layout(std430, binding = 5) buffer SB { float S[]; };
layout(std430, binding = 6) writeonly buffer OB { float O[]; };
layout(push_constant) uniform PC { uint T; uint dk; uint hk; uint hv; uint convCh; float eps; float qScale; uint pad2; } pc;

// q and k rows of the block as vec4s; a row stride of 33 vec4s (132 floats) spreads the C × C dot
// products' row reads over the banks
const uint C = 16u, KP = 33u;  // row stride in vec4s
shared vec4 Ks[C * KP];
shared vec4 Qs[C * KP];
shared float Am[C][C];
shared float QK[C][C];
shared float G[C];
shared float bt[C];
shared float nrm[2u * C];

// the sum over a column's 8 lanes (8j … 8j + 7)
float sum8(float x) {
  x += subgroupShuffleXor(x, 1u);
  x += subgroupShuffleXor(x, 2u);
  return x + subgroupShuffleXor(x, 4u);
}

void main() {
  uint h = gl_WorkGroupID.x, tid = gl_LocalInvocationID.x;
  uint p = tid & 7u, j = gl_WorkGroupID.y * 32u + (tid >> 3);
  uint dk = pc.dk, kh = h % pc.hk, dk4 = dk / 4u;
  bool colOn = j < dk;
  float col[16];
  [[unroll]] for (uint m = 0u; m < 16u; m++) {
    uint i = 16u * p + m;
    col[m] = colOn && i < dk ? S[(h * dk + i) * dk + j] : 0.0;
  }
  for (uint t0 = 0u; t0 < pc.T; t0 += C) {
    uint n = min(C, pc.T - t0);
    // stage this block's raw q and k (zero past the chunk's end and past dk)
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
      QK[t][s] = b;
    }
    barrier();
    // S₀ᵀk_t and S₀ᵀq_t for column j: this lane's 16 rows, then the column's 8 lanes summed
    float kS[C], o[C];
    [[unroll]] for (uint t = 0u; t < C; t++) {
      float a = 0.0, b = 0.0;
      [[unroll]] for (uint u = 0u; u < 4u; u++) {
        vec4 kv = Ks[t * KP + 4u * p + u], qv = Qs[t * KP + 4u * p + u];
        vec4 c4 = vec4(col[4u * u], col[4u * u + 1u], col[4u * u + 2u], col[4u * u + 3u]);
        a += dot(c4, kv);
        b += dot(c4, qv);
      }
      kS[t] = sum8(a);
      o[t] = sum8(b) * exp(G[t]);
    }
    // δ by forward substitution, then the outputs
    float dl[C];
    [[unroll]] for (uint t = 0u; t < C; t++) {
      float v = colOn && t < n ? U[(t0 + t) * pc.convCh + 2u * pc.hk * dk + h * dk + j] : 0.0;
      float d = bt[t] * (v - exp(G[t]) * kS[t]);
      [[unroll]] for (uint s = 0u; s < t; s++) d -= Am[t][s] * dl[s];
      dl[t] = d;
    }
    [[unroll]] for (uint t = 0u; t < C; t++) {
      [[unroll]] for (uint s = 0u; s <= t; s++) o[t] += QK[t][s] * dl[s];
      if (p == 0u && colOn && t < n) O[(t0 + t) * pc.hv * dk + h * dk + j] = o[t];
    }
    // the state at the block's end
    float gEnd = G[C - 1u];
    [[unroll]] for (uint s = 0u; s < C; s++) dl[s] *= exp(gEnd - G[s]);
    float dEnd = exp(gEnd);
    [[unroll]] for (uint m = 0u; m < 16u; m++) col[m] *= dEnd;
    [[unroll]] for (uint s = 0u; s < C; s++) {
      [[unroll]] for (uint u = 0u; u < 4u; u++) {
        vec4 kv = Ks[s * KP + 4u * p + u] * dl[s];
        col[4u * u] += kv.x; col[4u * u + 1u] += kv.y; col[4u * u + 2u] += kv.z; col[4u * u + 3u] += kv.w;
      }
    }
    barrier();  // Ks, Qs, G are rewritten by the next block
  }
  [[unroll]] for (uint m = 0u; m < 16u; m++) {
    uint i = 16u * p + m;
    if (colOn && i < dk) S[(h * dk + i) * dk + j] = col[m];
  }
}
