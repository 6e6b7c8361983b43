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

#define ROWS 4u
const uint TOKENS = TOKENS_N;
#define G 8u
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer WB { uint W[]; };
layout(std430, binding = 1) readonly buffer XB { float X[]; };
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
layout(push_constant) uniform PC {
  uint rows; uint n; uint rowBytes; uint xStride;
  uint yStride; uint flags; uint K; uint expertBytes;
  uint wOffset; uint xOffset; uint yOffset; uint nRows;
  uint upBytes; uint e0; uint ne; uint aux;  // aux: the epilogue's parameter (router: nExpert)
} pc;

shared float red[ROWS * TOKENS][64];

#ifdef EPILOGUE_ROUTER
// Epilogue: Y rows [0, nExpert) are the token's router logits (pc.aux: nExpert). Every workgroup
// publishes its rows and counts itself in CNT[0]; the last one routes (router.glsl) and resets
// the counter for the next layer.
layout(std430, binding = 5) writeonly buffer IDB { uint RIDS[]; };
layout(std430, binding = 6) buffer WTB { float RWTS[]; };
layout(std430, binding = 7) coherent buffer CB { uint CNT[]; };
#define ROUTER_LOGIT(e) Y[pc.yOffset + (e)]
#define OUT_IDS RIDS
#define OUT_WTS RWTS
#include "router.glsl"
shared bool isLast;
void epilogue() {
  memoryBarrierBuffer();
  barrier();
  if (gl_LocalInvocationID.x == 0u) isLast = atomicAdd(CNT[0], 1u) == gl_NumWorkGroups.x * gl_NumWorkGroups.y - 1u;
  barrier();
  if (isLast) {
    memoryBarrierBuffer();
    if (gl_LocalInvocationID.x == 0u) CNT[0] = 0u;
    route(0u, pc.aux, pc.K);
  }
}
#endif

// decode(o, g, w): the 8 values of group g of the row starting at byte o.
#if defined(TYPE_F32)
void decode(uint o, uint g, out float w[8]) {
  uint b = (o >> 2) + 8u * g;
  [[unroll]] for (uint i = 0u; i < 8u; i++) w[i] = uintBitsToFloat(W[b + i]);
}
#elif defined(TYPE_F16)
void decode(uint o, uint g, out float w[8]) {
  uint b = (o >> 2) + 4u * g;
  [[unroll]] for (uint i = 0u; i < 4u; i++) { vec2 v = unpackHalf2x16(W[b + i]); w[2u * i] = v.x; w[2u * i + 1u] = v.y; }
}
#elif defined(TYPE_BF16)
void decode(uint o, uint g, out float w[8]) {
  uint b = (o >> 2) + 4u * g;
  [[unroll]] for (uint i = 0u; i < 4u; i++) { uint v = W[b + i]; w[2u * i] = uintBitsToFloat(v << 16); w[2u * i + 1u] = uintBitsToFloat(v & 0xFFFF0000u); }
}
#elif defined(TYPE_Q8_0)
// 34-byte blocks: f16 d, 32 × int8; group = a quarter block
void decode(uint o, uint g, out float w[8]) {
  uint bo = o + 34u * (g >> 2), q = bo + 2u + 8u * (g & 3u);
  float d = WHALF(W, bo);
  uint a = WU32(W, q), c = WU32(W, q + 4u);
  [[unroll]] for (uint i = 0u; i < 4u; i++) {
    w[i] = d * float(int(a << (24u - 8u * i)) >> 24);
    w[i + 4u] = d * float(int(c << (24u - 8u * i)) >> 24);
  }
}
#elif defined(TYPE_Q2_K)
// 84-byte blocks: scales[16] (low nibble scale, high nibble min), qs[64], f16 d, f16 dmin.
// Value i of the block: qs[32·(i/128) + i%32] >> 2·((i%128)/32) & 3, scale byte i/16.
void decode(uint o, uint g, out float w[8]) {
  uint bo = o + 84u * (g >> 5), s = g & 31u;   // s: group of 8 within the block
  uint i0 = 8u * s, h = i0 >> 7, k = (i0 & 127u) >> 5, l0 = i0 & 31u;
  uint sc = WBYTE(W, bo + (i0 >> 4));
  float dl = WHALF(W, bo + 80u) * float(sc & 15u), ml = WHALF(W, bo + 82u) * float(sc >> 4);
  uint qo = bo + 16u + 32u * h + l0, sh = 2u * k;
  uint a = WU32(W, qo), c = WU32(W, qo + 4u);
  [[unroll]] for (uint i = 0u; i < 4u; i++) {
    w[i] = dl * float((a >> (8u * i + sh)) & 3u) - ml;
    w[i + 4u] = dl * float((c >> (8u * i + sh)) & 3u) - ml;
  }
}
#elif defined(TYPE_Q4_K) || defined(TYPE_Q5_K)
// 144 (Q4_K) / 176 (Q5_K) bytes: f16 d, f16 dmin, 12 bytes of 6-bit scales/mins, [Q5_K: qh[32]],
// qs[128]: value i: sub-block sb = i/32 → qs[32·(sb/2) + i%32] >> 4·(sb%2) (+ qh bit sb ≪ 4).
#if defined(TYPE_Q4_K)
const uint BB = 144u, QS = 16u;
#else
const uint BB = 176u, QS = 48u;
#endif
uvec2 scale_min(uint q, uint j) {
  if (j < 4u) return uvec2(WBYTE(W, q + j) & 63u, WBYTE(W, q + j + 4u) & 63u);
  return uvec2((WBYTE(W, q + j + 4u) & 15u) | ((WBYTE(W, q + j - 4u) >> 6) << 4), (WBYTE(W, q + j + 4u) >> 4) | ((WBYTE(W, q + j) >> 6) << 4));
}
void decode(uint o, uint g, out float w[8]) {
  uint bo = o + BB * (g >> 5), i0 = 8u * (g & 31u), sb = i0 >> 5, l0 = i0 & 31u;
  uvec2 sm = scale_min(bo + 4u, sb);
  float dl = WHALF(W, bo) * float(sm.x), ml = WHALF(W, bo + 2u) * float(sm.y);
  uint qo = bo + QS + 32u * (sb >> 1) + l0, sh = 4u * (sb & 1u);
  uint a = WU32(W, qo), c = WU32(W, qo + 4u);
#if defined(TYPE_Q5_K)
  uint ha = WU32(W, bo + 16u + l0), hc = WU32(W, bo + 20u + l0);
#endif
  [[unroll]] for (uint i = 0u; i < 4u; i++) {
    uint qa = (a >> (8u * i + sh)) & 15u, qc = (c >> (8u * i + sh)) & 15u;
#if defined(TYPE_Q5_K)
    qa |= ((ha >> (8u * i + sb)) & 1u) << 4;
    qc |= ((hc >> (8u * i + sb)) & 1u) << 4;
#endif
    w[i] = dl * float(qa) - ml;
    w[i + 4u] = dl * float(qc) - ml;
  }
}
#elif defined(TYPE_Q6_K)
// 210-byte blocks: ql[128], qh[64], int8 scales[16], f16 d. Value i: h = i/128, k = (i%128)/32,
// l = i%32: ql[64h + 32·(k%2) + l] >> 4·(k/2) & 15 | (qh[32h + l] >> 2k & 3) << 4, minus 32.
void decode(uint o, uint g, out float w[8]) {
  uint bo = o + 210u * (g >> 5), i0 = 8u * (g & 31u);
  uint h = i0 >> 7, k = (i0 & 127u) >> 5, l0 = i0 & 31u;
  float dl = WHALF(W, bo + 208u) * float(WSBYTE(W, bo + 192u + (i0 >> 4)));
  uint lo = bo + 64u * h + 32u * (k & 1u) + l0, ho = bo + 128u + 32u * h + l0;
  uint la = WU32(W, lo), lc = WU32(W, lo + 4u), qa = WU32(W, ho), qc = WU32(W, ho + 4u);
  uint ls = 4u * (k >> 1), hs = 2u * k;
  [[unroll]] for (uint i = 0u; i < 4u; i++) {
    w[i] = dl * float(int(((la >> (8u * i + ls)) & 15u) | (((qa >> (8u * i + hs)) & 3u) << 4)) - 32);
    w[i + 4u] = dl * float(int(((lc >> (8u * i + ls)) & 15u) | (((qc >> (8u * i + hs)) & 3u) << 4)) - 32);
  }
}
#elif defined(TYPE_IQ2_XXS)
// 66-byte blocks: f16 d, then 8 sub-blocks of 8 bytes: 4 grid indices, then a u32 with four
// 7-bit sign fields and a 4-bit scale. A group of 8 values = one grid entry.
void decode(uint o, uint g, out float w[8]) {
  uint bo = o + 66u * (g >> 5), ib = (g & 31u) >> 2, l = g & 3u;
  uint p = bo + 2u + 8u * ib;
  uint aux = WU32(W, p + 4u);
  float db = WHALF(W, bo) * (0.5 + float(aux >> 28)) * 0.25;
  uint s7 = (aux >> (7u * l)) & 127u;
  uint signs = s7 | ((bitCount(s7) & 1u) << 7);
  uvec2 gr = GRID[WBYTE(W, p + l)];
  [[unroll]] for (uint k = 0u; k < 8u; k++) {
    float mag = float(((k < 4u ? gr.x : gr.y) >> (8u * (k & 3u))) & 0xFFu);
    w[k] = ((signs >> k) & 1u) != 0u ? -db * mag : db * mag;
  }
}
#else
#error "matvec: no TYPE_ define"
#endif

// Groups per thread per loop trip (matvec): independent loads issued together hide memory latency (a
// decode-size row gives each thread only 4 groups, so one group per trip left the loop latency-bound;
// matmul already has 8 tokens × 4 rows of independent work per group).
const uint U = TOKENS_N == 1 ? 4u : 1u;

// acc[r][t] += W_r[group g] · X_t[group g]
void group_dot(uint wo[ROWS], uint xo[TOKENS], uint g, inout float acc[ROWS][TOKENS]) {
  float x[TOKENS][8];
  [[unroll]] for (uint t = 0u; t < TOKENS; t++) [[unroll]] for (uint i = 0u; i < 8u; i++) x[t][i] = X[xo[t] + 8u * g + i];
  [[unroll]] for (uint r = 0u; r < ROWS; r++) {
    float w[8];
    decode(wo[r], g, w);
    [[unroll]] for (uint t = 0u; t < TOKENS; t++) {
      float s = 0.0;
      [[unroll]] for (uint i = 0u; i < 8u; i++) s += w[i] * x[t][i];
      acc[r][t] += s;
    }
  }
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
