// One token's routing, run by the first subgroup of a workgroup (other subgroups return at once):
// softmax over the expert logits, top-k (ties: lowest id), renormalised weights into IDS/WTS.
// Lane l holds experts l, l + S, l + 2S, … (S = subgroup size; ≤ 32 each, so nExpert ≤ 32·S,
// checked by the engine) in registers; max, sum and each of the k arg-max rounds are subgroup
// operations, with no barrier or shared memory at all. The including shader defines
// ROUTER_LOGIT(e) (where expert e's logit is read), OUT_IDS and OUT_WTS (the output arrays).
const uint ROUTER_M = 32u;
void route(uint t, uint nExpert, uint K) {
  if (gl_SubgroupID != 0u) return;
  uint lane = gl_SubgroupInvocationID, S = gl_SubgroupSize;
  float p[ROUTER_M];
  float mx = -3.0e38;
  [[unroll]] for (uint m = 0u; m < ROUTER_M; m++) {
    uint e = lane + S * m;
    p[m] = e < nExpert ? ROUTER_LOGIT(e) : -3.0e38;
    mx = max(mx, p[m]);
  }
  mx = subgroupMax(mx);
  float sum = 0.0;
  [[unroll]] for (uint m = 0u; m < ROUTER_M; m++) {
    uint e = lane + S * m;
    p[m] = e < nExpert ? exp(p[m] - mx) : 0.0;
    sum += p[m];
  }
  float inv = 1.0 / subgroupAdd(sum);
  [[unroll]] for (uint m = 0u; m < ROUTER_M; m++) p[m] = lane + S * m < nExpert ? p[m] * inv : -1.0;
  // round k's winner stays in lane k's registers (K ≤ S), written by K lanes at once at the end:
  // no serial read-back of the weights from memory to renormalise them
  float tot = 0.0, myW = 0.0;
  uint myI = 0u;
  for (uint k = 0u; k < K; k++) {
    // this lane's best: its experts grow with m, so a strict > keeps the lowest id on ties
    float bv = -1.0; uint bi = 0xFFFFFFFFu;
    [[unroll]] for (uint m = 0u; m < ROUTER_M; m++) if (p[m] > bv) { bv = p[m]; bi = lane + S * m; }
    float wv = subgroupMax(bv);
    uint wi = subgroupMin(bv == wv ? bi : 0xFFFFFFFFu);
    // the owner takes the winner out of later rounds
    [[unroll]] for (uint m = 0u; m < ROUTER_M; m++) if (lane + S * m == wi) p[m] = -2.0;
    if (lane == k) { myW = wv; myI = wi; }
    if (K > S && lane == 0u) { OUT_IDS[t * K + k] = wi; OUT_WTS[t * K + k] = wv; }
    tot += wv;
  }
  if (K <= S) {
    if (lane < K) { OUT_IDS[t * K + lane] = myI; OUT_WTS[t * K + lane] = myW / tot; }
  } else if (lane == 0u) {
    for (uint k = 0u; k < K; k++) OUT_WTS[t * K + k] /= tot;
  }
}
