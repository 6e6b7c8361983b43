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
// (4 workgroups per head at dk = 128: 128 workgroups, not 32). Thread mapping: NP row parts a
// column, 32·NP threads: thread (j, p) = NP·j + p owns column j and key rows RP·p … RP·p + RP − 1
// (RP = 128 / NP) of the state, in registers for the whole chunk; the NP row parts of a column are
// adjacent lanes, summed with subgroup shuffles (no barrier; lavapipe lacks clustered adds). What does not depend on the state (the q and k
// norms, G, β, the block's A and QK matrices) deltanet_prep.comp has computed for every block at
// once (DBK); this walk over the blocks, one after the other, stages a block's q, k (L2-normed, q
// × 1/√dk), A and QK in shared memory, loads the next block's into registers while it does the
// column work, and passes two barriers a block (five when it computed A and QK itself). The
// output o is written un-normed: its gated norm needs the whole head (ssm_gnorm.comp). Dispatch:
// (hv, ⌈dk / 32⌉, 1). dk ≤ 128, a multiple of 4.
#extension GL_GOOGLE_include_directive : enable
#extension GL_KHR_shader_subgroup_shuffle : enable
#include "common.glsl"
// row parts a column (VK_TUNING.deltanetRowParts picks the module: deltanet_chunk, deltanet_chunk_p16)
#ifndef NP
#define NP 8
#endif
#define NT (32 * NP)
const uint RP = 128u / uint(NP), SJ = 512u / uint(NT);
layout(local_size_x = NT) in;
layout(std430, binding = 0) readonly buffer UB { float U[]; };
layout(std430, binding = 1) readonly buffer KB { float DBK[]; };
layout(std430, binding = 2) buffer SB { float S[]; };
layout(std430, binding = 3) writeonly buffer OB { float O[]; };
layout(push_constant) uniform PC { uint T; uint dk; uint hk; uint hv; uint convCh; float eps; float qScale; uint pad2; } pc;
#include "deltanet_block.glsl"

shared vec4 Ks[C * KP];
shared vec4 Qs[C * KP];
shared float Am[C][C];
shared float QK[C][C];
shared float G[C];
shared float bt[C];

// the sum over a column's NP adjacent lanes (NP = 16 needs 16-lane subgroups; lane ^ 8 through
// subgroupShuffle: lavapipe's subgroupShuffleXor by 8 gave NaN at 16 lanes)
float sumParts(float x) {
  x = sum8(x);
#if NP > 8
  x += subgroupShuffle(x, gl_SubgroupInvocationID ^ 8u);
#endif
  return x;
}

// What a thread stages of the block at t0: raw k and q 4-vectors e = tid + NT·i, i < SJ (token
// e / 32, dims 4·(e % 32) …) and their rows' norm factors, entry tid of A and of QK (tid < C²), G
// and β of token tid (tid < C), and its column's v of each token
struct Block { vec4 k[SJ]; vec4 q[SJ]; float nk[SJ]; float nq[SJ]; float am; float qk; float g; float b; float v[C]; };

Block load(uint t0, uint h, uint kh, uint tid, uint j, bool colOn) {
  Block r;
  uint dk = pc.dk, n = min(C, pc.T - t0), at = ((t0 / C) * pc.hv + h) * DB_LEN;
  [[unroll]] for (uint i = 0u; i < SJ; i++) {
    uint e = tid + uint(NT) * i, t = e >> 5, i4 = e & 31u;
    bool on = t < n && i4 < dk / 4u;
    uint ub = (t0 + t) * pc.convCh + 4u * i4;
    uint kb = ub + pc.hk * dk + kh * dk, qb = ub + kh * dk;
    r.k[i] = on ? vec4(U[kb], U[kb + 1u], U[kb + 2u], U[kb + 3u]) : vec4(0.0);
    r.q[i] = on ? vec4(U[qb], U[qb + 1u], U[qb + 2u], U[qb + 3u]) : vec4(0.0);
    r.nk[i] = DBK[at + DB_NRM + t];
    r.nq[i] = DBK[at + DB_NRM + C + t];
  }
#if NT > 256
  // (C² = 256 entries: threads past them stage none)
  r.am = tid < C * C ? DBK[at + DB_AM + tid] : 0.0;
  r.qk = tid < C * C ? DBK[at + DB_QK + tid] : 0.0;
#else
  r.am = DBK[at + DB_AM + tid];
  r.qk = DBK[at + DB_QK + tid];
#endif
  r.g = tid < C ? DBK[at + DB_G + tid] : 0.0;
  r.b = tid < C ? DBK[at + DB_BT + tid] : 0.0;
  [[unroll]] for (uint t = 0u; t < C; t++) r.v[t] = colOn && t < n ? U[(t0 + t) * pc.convCh + 2u * pc.hk * dk + h * dk + j] : 0.0;
  return r;
}

void main() {
  uint h = gl_WorkGroupID.x, tid = gl_LocalInvocationID.x;
  uint p = tid % uint(NP), j = gl_WorkGroupID.y * 32u + tid / uint(NP);
  uint dk = pc.dk, kh = h % pc.hk;
  bool colOn = j < dk;
  float col[RP];
  [[unroll]] for (uint m = 0u; m < RP; m++) {
    uint i = RP * p + m;
    col[m] = colOn && i < dk ? S[(h * dk + i) * dk + j] : 0.0;
  }
  Block nb = load(0u, h, kh, tid, j, colOn);
  for (uint t0 = 0u; t0 < pc.T; t0 += C) {
    uint n = min(C, pc.T - t0);
    // this block into shared memory (k and q normed as they land), its v kept in registers
    [[unroll]] for (uint i = 0u; i < SJ; i++) {
      uint e = tid + uint(NT) * i, t = e >> 5, i4 = e & 31u;
      Ks[t * KP + i4] = nb.k[i] * nb.nk[i];
      Qs[t * KP + i4] = nb.q[i] * nb.nq[i];
    }
#if NT > 256
    if (tid < C * C)
#endif
    { Am[tid / C][tid % C] = nb.am; QK[tid / C][tid % C] = nb.qk; }
    if (tid < C) { G[tid] = nb.g; bt[tid] = nb.b; }
    float vb[C] = nb.v;
    barrier();
    // the next block's loads in flight during this one's column work
    if (t0 + C < pc.T) nb = load(t0 + C, h, kh, tid, j, colOn);
    // S₀ᵀk_t and S₀ᵀq_t for column j: this lane's RP rows, then the column's NP lanes summed
    float kS[C], o[C];
    [[unroll]] for (uint t = 0u; t < C; t++) {
      float a = 0.0, b = 0.0;
      [[unroll]] for (uint u = 0u; u < RP / 4u; u++) {
        vec4 kv = Ks[t * KP + (RP / 4u) * p + u], qv = Qs[t * KP + (RP / 4u) * p + u];
        vec4 c4 = vec4(col[4u * u], col[4u * u + 1u], col[4u * u + 2u], col[4u * u + 3u]);
        a += dot(c4, kv);
        b += dot(c4, qv);
      }
      kS[t] = sumParts(a);
      o[t] = sumParts(b) * exp(G[t]);
    }
    // δ by forward substitution, then the outputs
    float dl[C];
    [[unroll]] for (uint t = 0u; t < C; t++) {
      float d = bt[t] * (vb[t] - exp(G[t]) * kS[t]);
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
    [[unroll]] for (uint m = 0u; m < RP; m++) col[m] *= dEnd;
    [[unroll]] for (uint s = 0u; s < C; s++) {
      [[unroll]] for (uint u = 0u; u < RP / 4u; u++) {
        vec4 kv = Ks[s * KP + (RP / 4u) * p + u] * dl[s];
        col[4u * u] += kv.x; col[4u * u + 1u] += kv.y; col[4u * u + 2u] += kv.z; col[4u * u + 3u] += kv.w;
      }
    }
    barrier();  // Ks, Qs, Am, QK, G, bt are rewritten by the next block
  }
  [[unroll]] for (uint m = 0u; m < RP; m++) {
    uint i = RP * p + m;
    if (colOn && i < dk) S[(h * dk + i) * dk + j] = col[m];
  }
}
