// Body of mvq.comp (TOKENS_N = 1), mvq2.comp and mvq4.comp (2 or 4 activation rows a workgroup:
// batched decode steps' dense products, each row summed exactly as mvq.comp sums it). A matvec
// (#17, #20) over 32-weight units against the activation rows as three int8 levels per 32 values (levels.glsl:
// x ≈ s0·a0 + s1·a1 + s2·a2, error about amax·2^-24 of the 32 values, f32's own rounding), with
// packed 4×8-bit integer dot products (VK_KHR_shader_integer_dot_product): a unit's level sums are
// exact integers, scaled once per level. The f32 matvec decodes, converts and multiplies every
// weight (~9 instructions a weight, the H200's limit near 2·10¹² weights/s); here 8 weights cost
// one dot product a level.
// X: the levels as uvec4, [row][level][half][unit] (a warp's loads one contiguous run);
// XS: per row and unit (s0, s1, s2, 0). L = pc.aux lanes a row (graph.ts matvecOp: min(64 or 32,
// n/32)), lane t takes units t, t+L, … of ROWS rows (main() below); the reduction as
// matvec.glsl for L = 64, in lane order through shared memory below. A row's bits depend on L: the
// host gives every form of one product the same L (graph.ts mvqLanes). Flags as matvec.glsl (bit 0
// expert gather, bit 1 X row = j, bit 2 GLU), bit 3 the workgroup grid transposed (main()). A row's
// sum depends only on its levels, n and L: decode and batched steps give it the same bits.
#extension GL_GOOGLE_include_directive : enable
#extension GL_EXT_spirv_intrinsics : require
#extension GL_KHR_shader_subgroup_arithmetic : enable
#include "common.glsl"
spirv_instruction(extensions = ["SPV_KHR_integer_dot_product"], capabilities = [6019, 6018], id = 4450)
int sdot(uint a, uint b, spirv_literal int fmt);
#define ROWS 4u
// threads a workgroup (WG_N: 64, or 256 in mvqw.comp for the routed pairs: four sets of rows
// where mvq has one, a quarter of the workgroups; each set's reduction is its own, so a row's sum
// is the same)
#ifndef WG_N
#define WG_N 64
#endif
const uint WG = WG_N;
layout(local_size_x = WG_N) in;
layout(std430, binding = 0) readonly buffer WB { uint W[]; };
layout(std430, binding = 1) readonly buffer XB { uvec4 XQ[]; };
layout(std430, binding = 2) buffer YB { float Y[]; };
layout(std430, binding = 3) readonly buffer IB { uint IDS[]; };
layout(std430, binding = 4) readonly buffer GB { uvec2 GRID[]; };
layout(std430, binding = 5) readonly buffer SB { vec4 XS[]; };
#include "matvec_push.glsl"
#include "decode.glsl"
shared float red[ROWS * TOKENS_N][WG_N];

// 4 magnitude bytes with the signs of 4 mask bits applied (two's complement per byte; no carries:
// a negated byte is ~m + 1 with m >= 1)
uint signed4(uint mag, uint m4) {
  uint b = (m4 * 0x00204081u) & 0x01010101u;
  return (mag ^ (b * 0xFFu)) + b;
}
uint xw(uvec4 x[6], uint k, uint w) { uvec4 v = x[2u * k + (w >> 2)]; uint c = w & 3u; return c == 0u ? v.x : c == 1u ? v.y : c == 2u ? v.z : v.w; }
// Σ_k s_k·S_k: the integer sums against the three levels, scaled (one expression for every type,
// so every kernel form sums a unit alike)
float levelSum(vec4 s, int S0, int S1, int S2) { return (s.x * float(S0) + s.y * float(S1)) + s.z * float(S2); }

#if defined(TYPE_Q8_0)
// Q8_0: the block's 32 quant bytes as 8 words and its scale (loaded once for all of mvq2's or
// mvq4's activation rows), and their dot product with a unit's levels
float q8Words(uint o, uint u, out uint qw[8]) {
  uint bo = o + 34u * u, i = (bo + 2u) >> 2;
  // the quant bytes start 2 bytes into a word when the block does
  bool odd = ((bo + 2u) & 2u) != 0u;
  uint prev = W[i];
  [[unroll]] for (uint w = 0u; w < 8u; w++) {
    uint nx = wword(i + w + 1u);
    qw[w] = odd ? (prev >> 16) | (nx << 16) : prev;
    prev = nx;
  }
  return WHALF(W, bo);
}
float q8Dot(uint qw[8], float db, uvec4 x[6], vec4 s) {
  int S0 = 0, S1 = 0, S2 = 0;
  [[unroll]] for (uint w = 0u; w < 8u; w++) {
    S0 += sdot(qw[w], xw(x, 0u, w), 0);
    S1 += sdot(qw[w], xw(x, 1u, w), 0);
    S2 += sdot(qw[w], xw(x, 2u, w), 0);
  }
  return db * levelSum(s, S0, S1, S2);
}
#endif

// unit u of the row at byte o against the activation unit (levels x, scales s; xh: Σ x over each
// 16-value half, for the types with a min)
float unitDot(uint o, uint u, uvec4 x[6], vec4 s, vec2 xh) {
  int S0 = 0, S1 = 0, S2 = 0;
  float db;
#if defined(TYPE_IQ2_XXS)
  uint bo = o + 66u * (u >> 3), p = bo + 2u + 8u * (u & 7u);
  uvec2 v = wu64e(p);
  db = WHALF(W, bo) * (0.5 + float(v.y >> 28)) * 0.25;
  [[unroll]] for (uint l = 0u; l < 4u; l++) {
    uvec2 gr = GRID[IQ2XXS_GRID_AT + ((v.x >> (8u * l)) & 0xFFu)];
    uint sg = ksigns((v.y >> (7u * l)) & 127u);
    uint w0 = signed4(gr.x, sg & 15u), w1 = signed4(gr.y, sg >> 4);
    S0 += sdot(w0, xw(x, 0u, 2u * l), 0) + sdot(w1, xw(x, 0u, 2u * l + 1u), 0);
    S1 += sdot(w0, xw(x, 1u, 2u * l), 0) + sdot(w1, xw(x, 1u, 2u * l + 1u), 0);
    S2 += sdot(w0, xw(x, 2u, 2u * l), 0) + sdot(w1, xw(x, 2u, 2u * l + 1u), 0);
  }
#elif defined(TYPE_Q8_0)
  uint qw[8];
  float d8 = q8Words(o, u, qw);
  return q8Dot(qw, d8, x, s);
#elif defined(TYPE_Q2_K)
  // unit ub of the 256-value block: the 32 bytes of qs at 32·(ub/4), shifted by 2·(ub%4): values in
  // byte order; two 16-value sub-blocks, each its scale (low nibble) and min (high nibble)
  uint bo = o + 84u * (u >> 3), ub = u & 7u, qo = (bo + 16u + 32u * (ub >> 2)) >> 2, sh = 2u * (ub & 3u);
  vec2 dm = unpackHalf2x16(W[(bo + 80u) >> 2]);
  uint sc = (W[(bo + 2u * ub) >> 2] >> (8u * ((2u * ub) & 3u))) & 0xFFFFu;
  int T0 = 0, T1 = 0, T2 = 0;
  [[unroll]] for (uint w = 0u; w < 4u; w++) {
    uint q = (W[qo + w] >> sh) & 0x03030303u;
    S0 += sdot(q, xw(x, 0u, w), 0); S1 += sdot(q, xw(x, 1u, w), 0); S2 += sdot(q, xw(x, 2u, w), 0);
  }
  [[unroll]] for (uint w = 4u; w < 8u; w++) {
    uint q = (W[qo + w] >> sh) & 0x03030303u;
    T0 += sdot(q, xw(x, 0u, w), 0); T1 += sdot(q, xw(x, 1u, w), 0); T2 += sdot(q, xw(x, 2u, w), 0);
  }
  float lo = levelSum(s, S0, S1, S2), hi = levelSum(s, T0, T1, T2);
  return (dm.x * float(sc & 15u) * lo - dm.y * float((sc >> 4) & 15u) * xh.x) + (dm.x * float((sc >> 8) & 15u) * hi - dm.y * float(sc >> 12) * xh.y);
#else
#error "mvq.comp: IQ2_XXS, Q8_0 and Q2_K only"
#endif
  return db * levelSum(s, S0, S1, S2);
}

// L = pc.aux threads a row (a divisor of 64, at most n/32: the 512-value rows of the routed down
// projections take 16), WG/L sets of ROWS rows a workgroup; TOKENS activation rows (plain
// rows only: no gather) each summed exactly as a workgroup of one would
const uint TOKENS = TOKENS_N;
void main() {
  bool glu = (pc.flags & 4u) != 0u;
  uint nu = pc.n / 32u, L = pc.aux, S = WG / L;
  uint outPerSet = glu ? ROWS / 2u : ROWS, tid = gl_LocalInvocationID.x, set = tid / L, lane = tid % L;
  // flags bit 3: the activation-row groups along x (several-row forms): the workgroups that read
  // the same weight rows run next to each other, so a weight larger than the L2 cache (the LM
  // head) is read from memory once, not once per group
  uvec2 wg = (pc.flags & 8u) != 0u ? gl_WorkGroupID.yx : gl_WorkGroupID.xy;
  uint r0 = (wg.x * S + set) * outPerSet, j0 = wg.y * TOKENS;
  uint wo[ROWS];
  [[unroll]] for (uint r = 0u; r < ROWS; r++) {
    uint wr = min(r0 + (glu ? r % (ROWS / 2u) : r), pc.rows - 1u);
    wo[r] = pc.wOffset + wr * pc.rowBytes + (glu && r >= ROWS / 2u ? pc.upBytes : 0u);
  }
  uint xrow[TOKENS];
  [[unroll]] for (uint t = 0u; t < TOKENS; t++) xrow[t] = min(j0 + t, pc.nRows - 1u);
#if TOKENS_N == 1
  if ((pc.flags & 1u) != 0u) {
    // uniform per workgroup (one activation row), so returning before barrier() is allowed
    uint ei = IDS[j0] - pc.e0;
    if (ei >= pc.ne) return;
    [[unroll]] for (uint r = 0u; r < ROWS; r++) wo[r] += ei * pc.expertBytes;
    if ((pc.flags & 2u) == 0u) xrow[0] = j0 / pc.K;
  }
#endif
  float acc[ROWS][TOKENS];
  [[unroll]] for (uint r = 0u; r < ROWS; r++) [[unroll]] for (uint t = 0u; t < TOKENS; t++) acc[r][t] = 0.0;
#if defined(TYPE_Q8_0) && TOKENS_N > 1
  // the weight words loaded once per unit for all activation rows (the same sums as unitDot)
  for (uint u = lane; u < nu; u += L) {
    uint qw[ROWS][8];
    float db[ROWS];
    [[unroll]] for (uint r = 0u; r < ROWS; r++) db[r] = q8Words(wo[r], u, qw[r]);
    [[unroll]] for (uint t = 0u; t < TOKENS; t++) {
      uvec4 x[6];
      [[unroll]] for (uint q = 0u; q < 6u; q++) x[q] = XQ[(xrow[t] * 6u + q) * nu + u];
      vec4 s = XS[xrow[t] * nu + u];
      [[unroll]] for (uint r = 0u; r < ROWS; r++) acc[r][t] += q8Dot(qw[r], db[r], x, s);
    }
  }
#else
  for (uint u = lane; u < nu; u += L) {
    [[unroll]] for (uint t = 0u; t < TOKENS; t++) {
      uvec4 x[6];
      [[unroll]] for (uint q = 0u; q < 6u; q++) x[q] = XQ[(xrow[t] * 6u + q) * nu + u];
      vec4 s = XS[xrow[t] * nu + u];
      vec2 xh = vec2(0.0);
#if defined(TYPE_Q2_K)
      // Σ x of each half from its levels (the same for every row)
      [[unroll]] for (uint h = 0u; h < 2u; h++) {
        float m = 0.0;
        [[unroll]] for (uint k = 0u; k < 3u; k++) {
          uvec4 v = x[2u * k + h];
          m += s[k] * float(sdot(v.x, 0x01010101u, 0) + sdot(v.y, 0x01010101u, 0) + sdot(v.z, 0x01010101u, 0) + sdot(v.w, 0x01010101u, 0));
        }
        xh[h] = m;
      }
#endif
      [[unroll]] for (uint r = 0u; r < ROWS; r++) acc[r][t] += unitDot(wo[r], u, x, s, xh);
    }
  }
#endif
  if (L == 64u) {
    // subgroup sums, then one shared-memory step across the subgroups (as matvec.glsl)
    [[unroll]] for (uint r = 0u; r < ROWS; r++) [[unroll]] for (uint t = 0u; t < TOKENS; t++) {
      float v = subgroupAdd(acc[r][t]);
      if (subgroupElect()) red[r * TOKENS + t][gl_SubgroupID] = v;
    }
    barrier();
    // the set's own subgroups (64 threads each set), in order
    uint nsg = gl_NumSubgroups / S, sg0 = set * nsg;
    if (lane < outPerSet * TOKENS) {
      uint rr = lane / TOKENS, t = lane % TOKENS, r = r0 + rr, j = j0 + t;
      float y = 0.0, yu = 0.0;
      for (uint sg = sg0; sg < sg0 + nsg; sg++) { y += red[rr * TOKENS + t][sg]; if (glu) yu += red[(rr + ROWS / 2u) * TOKENS + t][sg]; }
      if (glu) y = siluf(y) * yu;
      if (r < pc.rows && j < pc.nRows) Y[pc.yOffset + j * pc.yStride + r] = y;
    }
  } else {
    // each set's L partials summed in lane order through shared memory (any subgroup size)
    [[unroll]] for (uint r = 0u; r < ROWS; r++) [[unroll]] for (uint t = 0u; t < TOKENS; t++) red[r * TOKENS + t][tid] = acc[r][t];
    barrier();
    // (up to 32 sets × 4 rows × TOKENS outputs: a thread may write several)
    for (uint o = tid; o < S * outPerSet * TOKENS; o += WG) {
      uint st = o / (outPerSet * TOKENS), rr = (o / TOKENS) % outPerSet, t = o % TOKENS;
      uint r = (wg.x * S + st) * outPerSet + rr, j = j0 + t;
      float y = 0.0, yu = 0.0;
      for (uint l = 0u; l < L; l++) { y += red[rr * TOKENS + t][st * L + l]; if (glu) yu += red[(rr + ROWS / 2u) * TOKENS + t][st * L + l]; }
      if (glu) y = siluf(y) * yu;
      if (r < pc.rows && j < pc.nRows) Y[pc.yOffset + j * pc.yStride + r] = y;
    }
  }
}
