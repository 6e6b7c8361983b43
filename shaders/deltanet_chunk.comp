#version 450
// deltanet_chunk: the gated delta rule of deltanet.comp for a prefill chunk, in the chunked form:
// C = 16 tokens at a time with one state read and one state update per block instead of per token
// (token by token, a 512-token chunk waited out ~2500 barriers per layer).
// Within a block of tokens 1…C after state S₀ (G_t = Σ_{u≤t} g_u, the log decay so far; all g ≤ 0):
//   δ_t = β_t (v_t − e^{G_t} S₀ᵀk_t) − Σ_{s<t} A_ts δ_s,   A_ts = β_t e^{G_t−G_s} (k_t·k_s)
//       so δ = (I + A)⁻¹ r with r_t = β_t (v_t − e^{G_t} S₀ᵀk_t)
//   o_t = e^{G_t} S₀ᵀq_t + Σ_{s≤t} e^{G_t−G_s} (q_t·k_s) δ_s
//   S_C = e^{G_C} S₀ + Σ_s e^{G_C−G_s} k_s δ_sᵀ
// (unrolling S_t = e^{g_t} S_{t−1} + k_t δ_tᵀ, δ_t = β_t (v_t − (e^{g_t} S_{t−1})ᵀk_t): the same
// values as the recurrence up to rounding; deltanet_prep inverts the triangular system's matrix
// once a block, so each lane finds its tokens' δ as sums with no chain from token to token).
// Value columns are independent in this recurrence, so a workgroup takes 32 columns of one head
// (4 workgroups per head at dk = 128: 128 workgroups, not 32). Thread mapping: NP row parts a
// column, 32·NP threads: thread (j, p) = NP·j + p owns column j and key rows RP·p … RP·p + RP − 1
// (RP = 128 / NP) of the state, in registers for the whole chunk; the NP row parts of a column are
// adjacent lanes, their partial sums reduced with subgroup shuffles (no barrier; lavapipe lacks
// clustered adds) so that each lane ends with whole sums of its own C / NP tokens, whose r_t and
// outputs it computes; only r and then δ go back to every lane, for the state update (every lane
// summing every token's S₀ᵀk and S₀ᵀq took 10 shuffles a token, held all those sums in every lane
// and made the walk ~1.7× as long at NP = 16: docs/vulkan.md). What does not depend on the state
// (the q and k norms, G, β, the block's (I + A)⁻¹ and QK matrices) deltanet_prep.comp has computed
// for every block at once (DBK); this walk over the blocks, one after the other, stages a block's
// q, k (L2-normed, q × 1/√dk), Tm = (I + A)⁻¹ and QK in shared memory, loads the next block's into
// registers while it does the column work, and passes two barriers a block (five when it computed
// A and QK itself). The output o is written un-normed: its gated norm needs the whole head
// (ssm_gnorm.comp). Dispatch: (hv, ⌈dk / 32⌉, 1). dk ≤ 128, a multiple of 4.
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
// (a row stride of C + 1: a column's lanes read Tm's and QK's rows of their own tokens, one bank each)
shared float Tm[C][C + 1u];
shared float QK[C][C + 1u];
shared float G[C];
shared float bt[C];

// log2(NP), and the tokens of a block each lane owns (t = p + NP·r, r < NO) once the column's NP
// partial sums are reduced
#if NP != 8 && NP != 16
#error "deltanet_chunk: NP is 8 or 16"
#endif
const uint LP = NP == 16 ? 4u : 3u, NO = C / uint(NP);

// token t's value v of its owner lane (base: the column's first lane), in every lane of the column
float fromOwner(float v[NO], uint t, uint base) {
  return subgroupShuffle(v[t / uint(NP)], base + t % uint(NP));
}

// lane id ^ m (lavapipe's subgroupShuffleXor by 8 gave NaN at 16 lanes; subgroupShuffle does not)
float xorLane(float x, uint m) {
  return m < 8u ? subgroupShuffleXor(x, m) : subgroupShuffle(x, gl_SubgroupInvocationID ^ m);
}

// What a thread stages of the block at t0: raw k and q 4-vectors e = tid + NT·i, i < SJ (token
// e / 32, dims 4·(e % 32) …) and their rows' norm factors, entry tid of Tm and of QK (tid < C²), G
// and β of token tid (tid < C), and its column's v of the tokens it owns
struct Block { vec4 k[SJ]; vec4 q[SJ]; float nk[SJ]; float nq[SJ]; float tm; float qk; float g; float b; float v[NO]; };

Block load(uint t0, uint h, uint kh, uint tid, uint j, uint p, bool colOn) {
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
  r.tm = tid < C * C ? DBK[at + DB_TM + tid] : 0.0;
  r.qk = tid < C * C ? DBK[at + DB_QK + tid] : 0.0;
#else
  r.tm = DBK[at + DB_TM + tid];
  r.qk = DBK[at + DB_QK + tid];
#endif
  r.g = tid < C ? DBK[at + DB_G + tid] : 0.0;
  r.b = tid < C ? DBK[at + DB_BT + tid] : 0.0;
  [[unroll]] for (uint o = 0u; o < NO; o++) {
    uint t = p + uint(NP) * o;
    r.v[o] = colOn && t < n ? U[(t0 + t) * pc.convCh + 2u * pc.hk * dk + h * dk + j] : 0.0;
  }
  return r;
}

void main() {
  uint h = gl_WorkGroupID.x, tid = gl_LocalInvocationID.x;
  uint p = tid % uint(NP), j = gl_WorkGroupID.y * 32u + tid / uint(NP);
  uint dk = pc.dk, kh = h % pc.hk, base = gl_SubgroupInvocationID - p;
  bool colOn = j < dk;
  float col[RP];
  [[unroll]] for (uint m = 0u; m < RP; m++) {
    uint i = RP * p + m;
    col[m] = colOn && i < dk ? S[(h * dk + i) * dk + j] : 0.0;
  }
  Block nb = load(0u, h, kh, tid, j, p, colOn);
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
    { Tm[tid / C][tid % C] = nb.tm; QK[tid / C][tid % C] = nb.qk; }
    if (tid < C) { G[tid] = nb.g; bt[tid] = nb.b; }
    float vb[NO] = nb.v;
    barrier();
    // the next block's loads in flight during this one's column work
    if (t0 + C < pc.T) nb = load(t0 + C, h, kh, tid, j, p, colOn);
    // S₀ᵀk_t and S₀ᵀq_t for column j: this lane's RP rows of every token ...
    float ka[C], qa[C];
    [[unroll]] for (uint t = 0u; t < C; t++) {
      float a = 0.0, b = 0.0;
      [[unroll]] for (uint u = 0u; u < RP / 4u; u++) {
        vec4 kv = Ks[t * KP + (RP / 4u) * p + u], qv = Qs[t * KP + (RP / 4u) * p + u];
        vec4 c4 = vec4(col[4u * u], col[4u * u + 1u], col[4u * u + 2u], col[4u * u + 3u]);
        a += dot(c4, kv);
        b += dot(c4, qv);
      }
      ka[t] = a;
      qa[t] = b;
    }
    // ... summed over the column's NP lanes by halving: at the step of lane bit L a lane keeps the
    // tokens whose bit L is its own and adds its partner's sums of them, so after log2(NP) steps
    // lane p holds the sums of its own tokens p + NP·r, added in the pairwise order sum8 adds
    [[unroll]] for (uint L = 0u; L < LP; L++) {
      uint m = 1u << L, nh = C >> (L + 1u);
      bool hi = (p & m) != 0u;
      [[unroll]] for (uint r = 0u; r < nh; r++) {
        float k0 = ka[2u * r], k1 = ka[2u * r + 1u], q0 = qa[2u * r], q1 = qa[2u * r + 1u];
        ka[r] = (hi ? k1 : k0) + xorLane(hi ? k0 : k1, m);
        qa[r] = (hi ? q1 : q0) + xorLane(hi ? q0 : q1, m);
      }
    }
    // δ = (I + A)⁻¹ r (deltanet_prep's Tm): each owner's r_t = β_t (v_t − e^{G_t} S₀ᵀk_t), all C of
    // them to every lane of the column, each owner's δ_t = Σ_{s≤t} Tm_ts r_s, then all C δ to every lane
    float rhs[NO], dl[C];
    [[unroll]] for (uint r = 0u; r < NO; r++) {
      uint t = p + uint(NP) * r;
      rhs[r] = bt[t] * (vb[r] - exp(G[t]) * ka[r]);
    }
    [[unroll]] for (uint t = 0u; t < C; t++) dl[t] = fromOwner(rhs, t, base);
    float dOwn[NO];
    [[unroll]] for (uint r = 0u; r < NO; r++) {
      uint t = p + uint(NP) * r;
      float d = 0.0;
      [[unroll]] for (uint s = 0u; s < C; s++) if (s <= t) d += Tm[t][s] * dl[s];
      dOwn[r] = d;
    }
    [[unroll]] for (uint t = 0u; t < C; t++) dl[t] = fromOwner(dOwn, t, base);
    // each lane's own tokens' outputs
    [[unroll]] for (uint r = 0u; r < NO; r++) {
      uint t = p + uint(NP) * r;
      float o = qa[r] * exp(G[t]);
      [[unroll]] for (uint s = 0u; s < C; s++) if (s <= t) o += QK[t][s] * dl[s];
      if (colOn && t < n) O[(t0 + t) * pc.hv * dk + h * dk + j] = o;
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
    barrier();  // Ks, Qs, Tm, QK, G, bt are rewritten by the next block
  }
  [[unroll]] for (uint m = 0u; m < RP; m++) {
    uint i = RP * p + m;
    if (colOn && i < dk) S[(h * dk + i) * dk + j] = col[m];
  }
}
