// Body of matvec.comp (TOKENS = 1) and matmul.comp (TOKENS = 8): Y[j·yStride + r] = W_r · X_row(j).
// Block layouts: quant-spec §3 (decoded per element from uint words, see common.glsl).
// Thread mapping: a row is cut into groups of G = 8 consecutive values; thread t of the 64 takes
//   groups t, t+64, …, so neighbouring threads read neighbouring bytes of a row (coalesced loads;
//   the old one-block-per-thread mapping strided a warp's loads over ~1 KB). Each workgroup owns
//   ROWS output rows and TOKENS activation rows: a decoded weight group is reused for all TOKENS
//   activations (prefill), an activation group for all ROWS rows. Per (row, token): subgroupAdd,
//   then a sum over the workgroup's subgroups in shared memory (any subgroup size).
// Dispatch: (ceil(rows / ROWS), ceil(nRows / TOKENS), 1), or ceil(rows / (ROWS/2)) with GLU.
// Modes (flags): bit 0 = expert gather (TOKENS = 1 only): W offset += (IDS[j] - e0)·expertBytes
//   (routed experts, j = token·K + k); only experts [e0, e0 + ne) are in this binding (a window of
//   a tensor larger than one binding): other rows are left to the other windows' dispatches;
//   bit 1 = X row is j (down projection) instead of j / K; bit 2 = GLU: each gate row's up row lies
//   upBytes further (two's complement: it may lie before), Y = silu(gate·x)·(up·x).
// Windows of plain rows: W holds rows [first, first + rows) and yOffset = first.
#extension GL_GOOGLE_include_directive : enable
#extension GL_KHR_shader_subgroup_arithmetic : enable
#include "common.glsl"

// output rows per workgroup: 4 by default; matvec1/matvec2 (decode) take 1 or 2 (more workgroups,
// more loads in flight per row)
#ifndef ROWS_N
#define ROWS_N 4u
#endif
#define ROWS ROWS_N
const uint TOKENS = TOKENS_N;
#define G 8u
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer WB { uint W[]; };
// activations as vec4: a group's 8 values are two 16-byte loads (xOffset, xStride and n are
// multiples of 8, so every group starts 32-byte aligned); the 8-row matmul reads 64 values per
// group, and scalar loads made its load issue, not the weights, the limit
layout(std430, binding = 1) readonly buffer XB { vec4 X4[]; };
#ifdef EPILOGUE_ROUTER
// the last workgroup reads the other workgroups' outputs: they must reach it past the L1 caches
layout(std430, binding = 2) coherent buffer YB { float Y[]; };
#else
layout(std430, binding = 2) buffer YB { float Y[]; };
#endif
layout(std430, binding = 3) readonly buffer IB { uint IDS[]; };
// the IQ2_XXS grid (256 entries × 8 magnitude bytes) from a buffer: a dynamically indexed constant
// array would be copied to per-thread local memory on some drivers (NVIDIA: 3× slower kernels)
layout(std430, binding = 4) readonly buffer GB { uvec2 GRID[]; };
#include "matvec_push.glsl"

shared float red[ROWS * TOKENS][64];

#ifdef EPILOGUE_ROUTER
// Epilogue: Y rows [0, nExpert) of activation row j are row j's router logits (pc.aux: nExpert).
// Every workgroup of row j (workgroup y = j: one activation row a workgroup) publishes its rows
// and counts itself in CNT[j]; the last one routes row j (router.glsl) and resets the counter for
// the next layer. A batched decode step's rows are routed by one dispatch, each exactly as a row
// alone (its logits summed alike, the same routing code).
layout(std430, binding = 5) writeonly buffer IDB { uint RIDS[]; };
layout(std430, binding = 6) buffer WTB { float RWTS[]; };
layout(std430, binding = 7) coherent buffer CB { uint CNT[]; };
// (expanded inside route(t, …): t is the row being routed)
#define ROUTER_LOGIT(e) Y[pc.yOffset + t * pc.yStride + (e)]
#define OUT_IDS RIDS
#define OUT_WTS RWTS
#include "router.glsl"
shared bool isLast;
void epilogue() {
  memoryBarrierBuffer();
  barrier();
  uint j = gl_WorkGroupID.y;
  if (gl_LocalInvocationID.x == 0u) isLast = atomicAdd(CNT[j], 1u) == gl_NumWorkGroups.x - 1u;
  barrier();
  if (isLast) {
    memoryBarrierBuffer();
    if (gl_LocalInvocationID.x == 0u) CNT[j] = 0u;
    route(j, pc.aux, pc.K);
  }
}
#endif

#include "decode.glsl"

// Groups per thread per loop trip (matvec): independent loads issued together hide memory latency (a
// decode-size row gives each thread only 4 groups, so one group per trip left the loop latency-bound;
// matmul already has 8 tokens × 4 rows of independent work per group).
// matmul2/matmul4 (batched decode steps of 2-4 rows) have fewer: 2 groups per trip.
const uint U = TOKENS_N == 1 ? 4u : TOKENS_N <= 4 ? 2u : 1u;

// acc[r][t] += W_r[group g] · X_t[group g]
void group_dot(uint wo[ROWS], uint xo[TOKENS], uint g, inout float acc[ROWS][TOKENS]) {
  float x[TOKENS][8];
  [[unroll]] for (uint t = 0u; t < TOKENS; t++) {
    uint q = (xo[t] >> 2) + 2u * g;
    vec4 a = X4[q], b = X4[q + 1u];
    x[t][0] = a.x; x[t][1] = a.y; x[t][2] = a.z; x[t][3] = a.w;
    x[t][4] = b.x; x[t][5] = b.y; x[t][6] = b.z; x[t][7] = b.w;
  }
#ifdef DECODE_Q
  // the scale (and min) applied once per group and row, not per weight (decodeq: Q8_0, Q2_K,
  // IQ2_XXS); Σ x per token for the types with a min
#ifdef DECODE_MIN
  float xs[TOKENS];
  [[unroll]] for (uint t = 0u; t < TOKENS; t++) { xs[t] = 0.0; [[unroll]] for (uint i = 0u; i < 8u; i++) xs[t] += x[t][i]; }
#endif
  [[unroll]] for (uint r = 0u; r < ROWS; r++) {
    float q[8];
    vec2 sc;
    decodeq(wo[r], g, q, sc);
    [[unroll]] for (uint t = 0u; t < TOKENS; t++) {
      float s = 0.0;
      [[unroll]] for (uint i = 0u; i < 8u; i++) s += q[i] * x[t][i];
#ifdef DECODE_MIN
      acc[r][t] += sc.x * s - sc.y * xs[t];
#else
      acc[r][t] += sc.x * s;
#endif
    }
  }
#else
  [[unroll]] for (uint r = 0u; r < ROWS; r++) {
    float w[8];
    decode(wo[r], g, w);
    [[unroll]] for (uint t = 0u; t < TOKENS; t++) {
      float s = 0.0;
      [[unroll]] for (uint i = 0u; i < 8u; i++) s += w[i] * x[t][i];
      acc[r][t] += s;
    }
  }
#endif
}

void main() {
  bool glu = (pc.flags & 4u) != 0u;
  // GLU: the weight rows are [gate rows; up rows] in one buffer; a workgroup computes ROWS/2 gate
  // and the matching ROWS/2 up rows and writes silu(gate)·up (the SwiGLU is fused away)
  uint outPerWg = glu ? ROWS / 2u : ROWS;
  uint r0 = gl_WorkGroupID.x * outPerWg, j0 = gl_WorkGroupID.y * TOKENS, tid = gl_LocalInvocationID.x;
  uint ngroups = pc.n / G;
  uint wo[ROWS];
  [[unroll]] for (uint r = 0u; r < ROWS; r++) {
    uint wr = min(r0 + (glu ? r % (ROWS / 2u) : r), pc.rows - 1u);
    wo[r] = pc.wOffset + wr * pc.rowBytes + (glu && r >= ROWS / 2u ? pc.upBytes : 0u);
  }
  uint xo[TOKENS];
  [[unroll]] for (uint t = 0u; t < TOKENS; t++) {
    uint j = min(j0 + t, pc.nRows - 1u), xrow = j;
#if TOKENS_N == 1
    if ((pc.flags & 1u) != 0u) {
      // uniform per workgroup (one activation row), so returning before barrier() is allowed
      uint ei = IDS[j] - pc.e0;
      if (ei >= pc.ne) return;
      uint e = ei * pc.expertBytes;
      [[unroll]] for (uint r = 0u; r < ROWS; r++) wo[r] += e;
      if ((pc.flags & 2u) == 0u) xrow = j / pc.K;
    }
#endif
    xo[t] = pc.xOffset + xrow * pc.xStride;
  }
  float acc[ROWS][TOKENS];
  [[unroll]] for (uint r = 0u; r < ROWS; r++) [[unroll]] for (uint t = 0u; t < TOKENS; t++) acc[r][t] = 0.0;
  uint g0 = tid;
  // main trips: U whole groups each; then single groups for the rest of the row
  for (; g0 + 64u * (U - 1u) < ngroups; g0 += 64u * U) {
    [[unroll]] for (uint u = 0u; u < U; u++) group_dot(wo, xo, g0 + 64u * u, acc);
  }
  for (; g0 < ngroups; g0 += 64u) group_dot(wo, xo, g0, acc);
  // subgroup sums, then one shared-memory step across the workgroup's subgroups (any subgroup
  // size: 64 threads are 1…64 subgroups); one barrier instead of a 6-level tree
  [[unroll]] for (uint r = 0u; r < ROWS; r++) [[unroll]] for (uint t = 0u; t < TOKENS; t++) {
    float v = subgroupAdd(acc[r][t]);
    if (subgroupElect()) red[r * TOKENS + t][gl_SubgroupID] = v;
  }
  barrier();
  if (tid < outPerWg * TOKENS) {
    uint r = r0 + tid / TOKENS, j = j0 + tid % TOKENS;
    float y = 0.0, yu = 0.0;
    for (uint sg = 0u; sg < gl_NumSubgroups; sg++) { y += red[tid][sg]; if (glu) yu += red[tid + (ROWS / 2u) * TOKENS][sg]; }
    if (glu) y = siluf(y) * yu;
    if (r < pc.rows && j < pc.nRows) Y[pc.yOffset + j * pc.yStride + r] = y;
  }
#ifdef EPILOGUE_ROUTER
  epilogue();
#endif
}
