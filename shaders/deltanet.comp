#version 450
// deltanet: the gated delta rule, token by token, for one value head per workgroup.
//   S ← e^g S;  r = Sᵀk;  δ = β(v − r);  S ← S + k δᵀ;  o = Sᵀq
// with β = σ(b), g = A·softplus(α + dt), q/k of key head h mod hk (GGUF tiling).
// State layout on the GPU: S[(h·dk + i)·dk + j] = S_h[i][j] (key-index major, so the 128 threads
// of a head load and store each key row as one coalesced line; the session payload keeps the CPU
// engine's value-column-major layout and VkBackend transposes on save/load).
// Thread mapping: thread j owns value column j, held in registers for the whole chunk (loaded once,
// stored once: the per-token work has no dependent global-memory round trips); q and k staged in
// shared memory. Columns are independent, so a head's columns are split over workgroups of 32
// (dk/32 per head: 4× more SMs busy than one workgroup per head). Dispatch: (hv, ceil(dk/32), 1).
// dk ≤ 128.
#extension GL_GOOGLE_include_directive : enable
#include "common.glsl"
layout(local_size_x = 32) in;
layout(std430, binding = 0) readonly buffer UB { float U[]; };
layout(std430, binding = 1) readonly buffer BB { float Bt[]; };
layout(std430, binding = 2) readonly buffer AB { float AL[]; };
layout(std430, binding = 3) readonly buffer DB { float DT[]; };
layout(std430, binding = 4) readonly buffer EB { float A[]; };
layout(std430, binding = 5) buffer SB { float S[]; };
layout(std430, binding = 6) buffer OB { float O[]; };
layout(push_constant) uniform PC { uint T; uint dk; uint hk; uint hv; uint convCh; uint pad0; uint pad1; uint pad2; } pc;
shared float q[128];
shared float k[128];

float softplusf(float x) { return x > 20.0 ? x : log(1.0 + exp(x)); }

void main() {
  uint h = gl_WorkGroupID.x, tid = gl_LocalInvocationID.x, j = gl_WorkGroupID.y * 32u + tid;
  uint kh = h % pc.hk;
  uint base = h * pc.dk * pc.dk + j;
  float col[128];
  // constant, unrolled bounds keep col[] in registers (a dynamic index would spill it)
  [[unroll]] for (uint i = 0u; i < 128u; i++) col[i] = (j < pc.dk && i < pc.dk) ? S[base + i * pc.dk] : 0.0;
  for (uint t = 0u; t < pc.T; t++) {
    uint ub = t * pc.convCh;
    for (uint i = tid; i < pc.dk; i += 32u) { q[i] = U[ub + kh * pc.dk + i]; k[i] = U[ub + pc.hk * pc.dk + kh * pc.dk + i]; }
    barrier();
    float beta = sigmoidf(Bt[t * pc.hv + h]);
    float decay = exp(A[h] * softplusf(AL[t * pc.hv + h] + DT[h]));
    if (j < pc.dk) {
      float r = 0.0;
      [[unroll]] for (uint i = 0u; i < 128u; i++) if (i < pc.dk) { col[i] *= decay; r += col[i] * k[i]; }
      float v = U[ub + 2u * pc.hk * pc.dk + h * pc.dk + j];
      float delta = beta * (v - r);
      float o = 0.0;
      [[unroll]] for (uint i = 0u; i < 128u; i++) if (i < pc.dk) { col[i] += delta * k[i]; o += col[i] * q[i]; }
      O[t * pc.hv * pc.dk + h * pc.dk + j] = o;
    }
    barrier();
  }
  if (j < pc.dk) [[unroll]] for (uint i = 0u; i < 128u; i++) if (i < pc.dk) S[base + i * pc.dk] = col[i];
}
