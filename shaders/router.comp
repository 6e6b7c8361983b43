#version 450
// router: per token, softmax over the expert logits, top-k (ties: lowest id), renormalised weights.
// One invocation per token (256 experts × top-8 is small). Dispatch: (T, 1, 1).
layout(local_size_x = 1) in;
layout(std430, binding = 0) buffer RB { float R[]; };
layout(std430, binding = 1) buffer IB { uint IDS[]; };
layout(std430, binding = 2) buffer WB { float WTS[]; };
layout(push_constant) uniform PC { uint nExpert; uint K; } pc;
void main() {
  uint t = gl_WorkGroupID.x;
  uint o = t * pc.nExpert;
  float mx = -3.0e38;
  for (uint e = 0u; e < pc.nExpert; e++) mx = max(mx, R[o + e]);
  float sum = 0.0;
  for (uint e = 0u; e < pc.nExpert; e++) { float v = exp(R[o + e] - mx); R[o + e] = v; sum += v; }
  for (uint e = 0u; e < pc.nExpert; e++) R[o + e] /= sum;
  float tot = 0.0;
  for (uint k = 0u; k < pc.K; k++) {
    uint best = 0u; float bv = -1.0;
    for (uint e = 0u; e < pc.nExpert; e++) if (R[o + e] > bv) { bv = R[o + e]; best = e; }
    IDS[t * pc.K + k] = best;
    WTS[t * pc.K + k] = bv;
    R[o + best] = -2.0;
    tot += bv;
  }
  for (uint k = 0u; k < pc.K; k++) WTS[t * pc.K + k] /= tot;
}
