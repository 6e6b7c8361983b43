#version 450
// router: per token, softmax over the expert logits, top-k (ties: lowest id), renormalised weights.
// Thread mapping: workgroup per token, 256 threads striding over experts; max/sum and each of the
//   k arg-max rounds are shared-memory reductions (one serial thread would be latency-bound).
// Dispatch: (T, 1, 1).
layout(local_size_x = 256) in;
layout(std430, binding = 0) buffer RB { float R[]; };
layout(std430, binding = 1) buffer IB { uint IDS[]; };
layout(std430, binding = 2) buffer WB { float WTS[]; };
layout(push_constant) uniform PC { uint nExpert; uint K; } pc;
shared float p[1024];
shared float rv[256];
shared uint ri[256];
void main() {
  uint t = gl_WorkGroupID.x, tid = gl_LocalInvocationID.x;
  uint o = t * pc.nExpert;
  float mx = -3.0e38;
  for (uint e = tid; e < pc.nExpert; e += 256u) { p[e] = R[o + e]; mx = max(mx, p[e]); }
  rv[tid] = mx;
  barrier();
  for (uint s = 128u; s > 0u; s >>= 1) { if (tid < s) rv[tid] = max(rv[tid], rv[tid + s]); barrier(); }
  mx = rv[0];
  barrier();
  float sum = 0.0;
  for (uint e = tid; e < pc.nExpert; e += 256u) { p[e] = exp(p[e] - mx); sum += p[e]; }
  rv[tid] = sum;
  barrier();
  for (uint s = 128u; s > 0u; s >>= 1) { if (tid < s) rv[tid] += rv[tid + s]; barrier(); }
  float inv = 1.0 / rv[0];
  barrier();
  for (uint e = tid; e < pc.nExpert; e += 256u) p[e] *= inv;
  barrier();
  float tot = 0.0;
  for (uint k = 0u; k < pc.K; k++) {
    float bv = -1.0; uint bi = 0xFFFFFFFFu;
    for (uint e = tid; e < pc.nExpert; e += 256u) if (p[e] > bv) { bv = p[e]; bi = e; }
    rv[tid] = bv; ri[tid] = bi;
    barrier();
    for (uint s = 128u; s > 0u; s >>= 1) {
      if (tid < s && (rv[tid + s] > rv[tid] || (rv[tid + s] == rv[tid] && ri[tid + s] < ri[tid]))) { rv[tid] = rv[tid + s]; ri[tid] = ri[tid + s]; }
      barrier();
    }
    if (tid == 0u) { IDS[t * pc.K + k] = ri[0]; WTS[t * pc.K + k] = rv[0]; p[ri[0]] = -2.0; }
    tot += rv[0];
    barrier();
  }
  if (tid < pc.K) WTS[t * pc.K + tid] /= tot;
}
