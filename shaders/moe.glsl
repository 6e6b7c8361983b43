// The MoE output of token t at element i: Σ_k w_tk · D[t,k][i] + σ(SG[t]) · DS[t][i] (routed
// experts + gated shared expert), rows of n floats. The including shader declares the buffers D,
// WTS, DS and SG (moe_combine.comp; rmsnorm.comp, which fuses it into the next layer's norm).
float moe_out(uint t, uint i, uint n, uint K) {
  float acc = 0.0;
  for (uint k = 0u; k < K; k++) acc += WTS[t * K + k] * D[(t * K + k) * n + i];
  return acc + sigmoidf(SG[t]) * DS[t * n + i];
}
