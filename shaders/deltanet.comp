#version 450
// deltanet: the gated delta rule, token by token, for one value head per workgroup (q/k L2 norm
// and the gated output norm fused in).
//   S ← e^g S;  r = Sᵀk;  δ = β(v − r);  S ← S + k δᵀ;  o = Sᵀq
// with β = σ(b), g = A·softplus(α + dt), q/k of key head h mod hk (GGUF tiling).
// State layout on the GPU: S[(h·dk + i)·dk + j] = S_h[i][j] (key-index major, so the threads of
// a head load and store each key row as coalesced lines; the session payload keeps the CPU
// engine's value-column-major layout and VkBackend transposes on save/load).
// Thread mapping: 512 threads, thread (p, j) = p·128 + j owns rows [32p, 32p + 32) of value column
// j, held in registers for the whole chunk (loaded once, stored once). Four row quarters instead
// of one thread per whole column: 4× the loads in flight per head (the decode step is a single
// load-compute-store of the 64 KiB state, latency-bound with 128 threads) and 32-long instead of
// 128-long dependent FMA chains per token; the quarters' partial sums of r and o meet in shared
// memory. q and k are staged in shared memory. The gated norm of the output is fused in:
// o_h ← rms(o_h) ⊙ w ⊙ silu(z_h) (the head's outputs are all in this workgroup).
// Draft steps (speculative decoding) run several tokens of one session through this kernel and
// keep the state after each of the first ckRows tokens in CK (token t at t·hv·dk², the same
// layout as S): the session goes back to the state after its last accepted token by a copy.
// Dispatch: (hv, 1, 1); deltanet_rows: (hv, rows, 1), the row's one token (rows.glsl). dk ≤ 128.
#extension GL_GOOGLE_include_directive : enable
#extension GL_KHR_shader_subgroup_arithmetic : enable
#include "common.glsl"
#include "rows.glsl"
layout(local_size_x = 512) in;
#define ROW ROW_AT(gl_WorkGroupID.y)
layout(std430, binding = 0) readonly buffer UB { float U[]; };
layout(std430, binding = 1) readonly buffer BB { float Bt[]; };
layout(std430, binding = 2) readonly buffer AB { float AL[]; };
layout(std430, binding = 3) readonly buffer DB { float DT[]; };
layout(std430, binding = 4) readonly buffer EB { float A[]; };
layout(std430, binding = 5) buffer SB { float S_[]; } sb_r[BATCH];
#define S sb_r[ROW].S_
layout(std430, binding = 6) buffer OB { float O[]; };
layout(std430, binding = 7) readonly buffer ZB { float Z[]; };
layout(std430, binding = 8) readonly buffer NB { float NW[]; };
layout(std430, binding = 9) writeonly buffer CB { float CK[]; };
layout(push_constant) uniform PC { uint T; uint dk; uint hk; uint hv; uint convCh; float eps; float qScale; uint ckRows; } pc;
shared float q[128];
shared float k[128];
shared float red[128];
shared float red2[128];
shared float part[4][128];

void main() {
  uint h = gl_WorkGroupID.x, tid = gl_LocalInvocationID.x;
  uint j = tid & 127u, p = tid >> 7, i0 = 32u * p;
  // the first quarter's threads (whole subgroups: 128 is a multiple of every subgroup size) do
  // the per-column work: q/k loads, the output and its norm
  bool lead = p == 0u;
  uint nLead = 128u / gl_SubgroupSize;
  uint kh = h % pc.hk;
  uint base = h * pc.dk * pc.dk + j;
  float col[32];
  // constant, unrolled bounds keep col[] in registers (a dynamic index would spill it)
  [[unroll]] for (uint i = 0u; i < 32u; i++) col[i] = (j < pc.dk && i0 + i < pc.dk) ? S[base + (i0 + i) * pc.dk] : 0.0;
  for (uint t = ROW; t < ROW + pc.T; t++) {
    uint ub = t * pc.convCh;
    // q, k ← x / sqrt(Σx² + 1e-6), q also × 1/sqrt(dk): the L2 norm is fused in (both value heads
    // of a key head normalise the same q/k; cheaper than a dispatch and a barrier level)
    float qv = lead && j < pc.dk ? U[ub + kh * pc.dk + j] : 0.0, kv = lead && j < pc.dk ? U[ub + pc.hk * pc.dk + kh * pc.dk + j] : 0.0;
    float sq = subgroupAdd(qv * qv), sk = subgroupAdd(kv * kv);
    if (lead && subgroupElect()) { red[gl_SubgroupID] = sq; red2[gl_SubgroupID] = sk; }
    barrier();
    sq = 0.0; sk = 0.0;
    for (uint sg = 0u; sg < nLead; sg++) { sq += red[sg]; sk += red2[sg]; }
    if (lead && j < pc.dk) { q[j] = qv * (inversesqrt(sq + 1e-6) * pc.qScale); k[j] = kv * inversesqrt(sk + 1e-6); }
    barrier();
    float beta = sigmoidf(Bt[t * pc.hv + h]);
    float decay = exp(A[h] * softplusf(AL[t * pc.hv + h] + DT[h]));
    // r = Sᵀk: each quarter's partial, summed over the quarters in shared memory
    float rp = 0.0;
    [[unroll]] for (uint i = 0u; i < 32u; i++) if (i0 + i < pc.dk) { col[i] *= decay; rp += col[i] * k[i0 + i]; }
    part[p][j] = rp;
    barrier();
    float r = part[0][j] + part[1][j] + part[2][j] + part[3][j];
    float v = j < pc.dk ? U[ub + 2u * pc.hk * pc.dk + h * pc.dk + j] : 0.0;
    float delta = beta * (v - r);
    float op = 0.0;
    [[unroll]] for (uint i = 0u; i < 32u; i++) if (i0 + i < pc.dk) { col[i] += delta * k[i0 + i]; op += col[i] * q[i0 + i]; }
    barrier();  // every quarter has read part[·][j] for r
    part[p][j] = op;
    barrier();
    float o = lead && j < pc.dk ? part[0][j] + part[1][j] + part[2][j] + part[3][j] : 0.0;
    // gated norm over the head: subgroup sums of o², then across the lead subgroups in shared memory
    float ss = subgroupAdd(o * o);
    if (lead && subgroupElect()) red[gl_SubgroupID] = ss;
    barrier();
    float tot = 0.0;
    for (uint sg = 0u; sg < nLead; sg++) tot += red[sg];
    uint oo = t * pc.hv * pc.dk + h * pc.dk + j;
    if (lead && j < pc.dk) O[oo] = o * inversesqrt(tot / float(pc.dk) + pc.eps) * NW[j] * siluf(Z[oo]);
    if (t - ROW < pc.ckRows && j < pc.dk) {
      uint ck = (t - ROW) * pc.hv * pc.dk * pc.dk + base;
      [[unroll]] for (uint i = 0u; i < 32u; i++) if (i0 + i < pc.dk) CK[ck + (i0 + i) * pc.dk] = col[i];
    }
    barrier();
  }
  if (j < pc.dk) [[unroll]] for (uint i = 0u; i < 32u; i++) if (i0 + i < pc.dk) S[base + (i0 + i) * pc.dk] = col[i];
}
