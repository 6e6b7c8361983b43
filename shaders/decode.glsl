// Weight decoders shared by matvec.glsl and mm.glsl: decode(o, g, w) gives the 8 values of group g
// (values 8g … 8g+7) of the row starting at byte o of W, for the weight type TYPE_*. The including
// shader declares W (uint words) and GRID (uvec2 units: the lookup tables of the IQ types, laid out
// by scripts/build/gen-tables.mjs; generated/grids.glsl says where each starts).
// Block layouts: quant-spec §3 (IQ2_S, IQ3_S, IQ1_S, IQ1_M: core-as/quant/dequant.ts).
// decode(o, g, w): the 8 values of group g of the row starting at byte o.
// DECODE_RAW (F32, Q8_0, Q2_K, IQ2_XXS): decode is a load and a decode, rawq(o, g, r) loading the
// words the group's values come from into r (a RAWW) and decoder(r, o, g, w) (decodeqr, decodeqsr:
// decodeq's and decodeqs's forms) decoding them, so the tiled matmuls (mm.glsl, mmc.glsl) issue a
// later step's loads and decode them when they stage that step: the loads' latency passes while
// earlier steps multiply (decoded at the load, each step waited for its own loads).
#include "generated/grids.glsl"

// entry i of a table of u32 entries (two per GRID unit)
uint grid32(uint at, uint i) { uvec2 v = GRID[at + (i >> 1)]; return (i & 1u) != 0u ? v.y : v.x; }
// byte k (0..7) of a GRID unit
uint unitByte(uvec2 v, uint k) { return ((k < 4u ? v.x : v.y) >> (8u * (k & 3u))) & 0xFFu; }
// Word loads where the layout fixes the alignment: WU32's alignment test is a branch, divergent
// where neighbouring blocks differ in alignment (34-byte Q8_0, 66-byte IQ2_XXS, 210-byte Q6_K), and
// one or two loads each way; the branch-free forms below load the words and select.
// W[i] clamped to the binding (a pair or triple of words may end past the last block)
uint wword(uint i) { return W[min(i, uint(W.length()) - 1u)]; }
// the u32 at an even byte offset: two word loads, no branch
uint wu32e(uint q) {
  uint i = q >> 2, w0 = W[i], w1 = wword(i + 1u);
  return (q & 2u) != 0u ? (w0 >> 16) | (w1 << 16) : w0;
}
// the 8 bytes at an even byte offset as two u32: three word loads, no branch
uvec2 wu64e(uint q) {
  uint i = q >> 2, w0 = W[i], w1 = wword(i + 1u), w2 = wword(i + 2u);
  return (q & 2u) != 0u ? uvec2((w0 >> 16) | (w1 << 16), (w1 >> 16) | (w2 << 16)) : uvec2(w0, w1);
}
// the 8-bit sign mask of a 7-bit ksigns index: the eighth sign makes the parity even
uint ksigns(uint s7) { return s7 | ((bitCount(s7) & 1u) << 7); }
// kvalues_iq4nl[i] (16 int8 in two GRID units)
float kvalue(uint i) { return float(int(unitByte(GRID[KVALUES_IQ4NL_AT + (i >> 3)], i & 7u) << 24) >> 24); }
// 8 nibbles of a 32-value block whose 16 bytes at q hold values 0..15 (low) and 16..31 (high)
// (Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL, and each IQ4_XS sub-block): those of quarter gi
void nibbles(uint q, uint gi, out uint n[8]) {
  uint a = WU32(W, q + 8u * (gi & 1u)), c = WU32(W, q + 8u * (gi & 1u) + 4u), sh = 4u * (gi >> 1);
  [[unroll]] for (uint i = 0u; i < 4u; i++) { n[i] = (a >> (8u * i + sh)) & 15u; n[i + 4u] = (c >> (8u * i + sh)) & 15u; }
}
// the fifth bits (Q5_0, Q5_1) of quarter gi: bit 8gi + i of the u32 at qh
void fifth(uint qh, uint gi, inout uint n[8]) {
  uint h = WU32(W, qh) >> (8u * gi);
  [[unroll]] for (uint i = 0u; i < 8u; i++) n[i] |= ((h >> i) & 1u) << 4;
}
#if defined(TYPE_F32)
// rawq: the group's 8 words, its values' bits
#define DECODE_RAW
struct RawF32 { uvec4 a, b; };
#define RAWW RawF32
void rawq(uint o, uint g, out RawF32 r) {
  uint b = (o >> 2) + 8u * g;
  r.a = uvec4(W[b], W[b + 1u], W[b + 2u], W[b + 3u]);
  r.b = uvec4(W[b + 4u], W[b + 5u], W[b + 6u], W[b + 7u]);
}
void decoder(RawF32 r, uint o, uint g, out float w[8]) {
  vec4 a = uintBitsToFloat(r.a), b = uintBitsToFloat(r.b);
  w = float[8](a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w);
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
// decodeq: the group's quant values and its scale (decode() at the end gives the weights): the
// matvecs form a group's row · x as d · Σ q·x, one multiply per group instead of per weight.
// DECODE_SCALED (mmc.glsl's SCALED products): decodeqs gives integer values exact in f16 and a
// scale shared by the aligned DECODE_SCALED values around them (here decodeq's, per block)
#define DECODE_Q
#define DECODE_SCALED 32u
#define decodeqs decodeq
#define decodeqsr decodeqr
// rawq: the word holding d and the three under the group's 8 bytes
#define DECODE_RAW
void rawq(uint o, uint g, out uvec4 r) {
  uint bo = o + 34u * (g >> 2), i = (bo + 2u + 8u * (g & 3u)) >> 2;
  r = uvec4(W[bo >> 2], W[i], wword(i + 1u), wword(i + 2u));
}
void decodeqr(uvec4 r, uint o, uint g, out float q[8], out vec2 sc) {
  uint bo = o + 34u * (g >> 2), qo = bo + 2u + 8u * (g & 3u);
  sc = vec2(unpackHalf2x16((bo & 2u) != 0u ? r.x >> 16 : r.x & 0xFFFFu).x, 0.0);
  uvec2 v = (qo & 2u) != 0u ? uvec2((r.y >> 16) | (r.z << 16), (r.z >> 16) | (r.w << 16)) : r.yz;
  [[unroll]] for (uint i = 0u; i < 4u; i++) {
    q[i] = float(int(v.x << (24u - 8u * i)) >> 24);
    q[i + 4u] = float(int(v.y << (24u - 8u * i)) >> 24);
  }
}
#elif defined(TYPE_Q2_K)
// 84-byte blocks: scales[16] (low nibble scale, high nibble min), qs[64], f16 d, f16 dmin.
// Value i of the block: qs[32·(i/128) + i%32] >> 2·((i%128)/32) & 3, scale byte i/16.
// Blocks stay 4-byte aligned (rows and offsets are multiples of 4; matvecOp checks), so every
// field is read with plain word loads: d and dmin are one word.
// decodeq: the group's 2-bit values, its scale and min (row · x = dl · Σ q·x − ml · Σ x)
#define DECODE_Q
#define DECODE_MIN
#define DECODE_RAW
// rawq: the words of the group's scale byte, of d and dmin, and its 8 two-bit values
void rawq(uint o, uint g, out uvec4 r) {
  uint bo = o + 84u * (g >> 5), i0 = 8u * (g & 31u);
  uint qo = (bo + 16u + 32u * (i0 >> 7) + (i0 & 31u)) >> 2;
  r = uvec4(W[(bo + (i0 >> 4)) >> 2], W[(bo + 80u) >> 2], W[qo], W[qo + 1u]);
}
void decodeqr(uvec4 r, uint o, uint g, out float q[8], out vec2 sc) {
  uint bo = o + 84u * (g >> 5), i0 = 8u * (g & 31u), sh = 2u * ((i0 & 127u) >> 5);
  uint scb = (r.x >> (((bo + (i0 >> 4)) & 3u) * 8u)) & 0xFFu;
  vec2 dm = unpackHalf2x16(r.y);
  sc = vec2(dm.x * float(scb & 15u), dm.y * float(scb >> 4));
  [[unroll]] for (uint i = 0u; i < 4u; i++) {
    q[i] = float((r.z >> (8u * i + sh)) & 3u);
    q[i + 4u] = float((r.w >> (8u * i + sh)) & 3u);
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
// blocks stay 4-byte aligned (as Q2_K): d and dmin are one word, the quant words plain loads
void decode(uint o, uint g, out float w[8]) {
  uint bo = o + BB * (g >> 5), i0 = 8u * (g & 31u), sb = i0 >> 5, l0 = i0 & 31u;
  uvec2 sm = scale_min(bo + 4u, sb);
  vec2 dm = unpackHalf2x16(W[bo >> 2]);
  float dl = dm.x * float(sm.x), ml = dm.y * float(sm.y);
  uint qo = (bo + QS + 32u * (sb >> 1) + l0) >> 2, sh = 4u * (sb & 1u);
  uint a = W[qo], c = W[qo + 1u];
#if defined(TYPE_Q5_K)
  uint ha = W[(bo + 16u + l0) >> 2], hc = W[(bo + 20u + l0) >> 2];
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
  uvec2 lv = wu64e(lo), hv = wu64e(ho);
  uint la = lv.x, lc = lv.y, qa = hv.x, qc = hv.y;
  uint ls = 4u * (k >> 1), hs = 2u * k;
  [[unroll]] for (uint i = 0u; i < 4u; i++) {
    w[i] = dl * float(int(((la >> (8u * i + ls)) & 15u) | (((qa >> (8u * i + hs)) & 3u) << 4)) - 32);
    w[i + 4u] = dl * float(int(((lc >> (8u * i + ls)) & 15u) | (((qc >> (8u * i + hs)) & 3u) << 4)) - 32);
  }
}
#elif defined(TYPE_IQ2_XXS)
// 66-byte blocks: f16 d, then 8 sub-blocks of 8 bytes: 4 grid indices, then a u32 with four
// 7-bit sign fields and a 4-bit scale. A group of 8 values = one grid entry. (A copy of the grid in
// shared memory, filled by each workgroup, made the decode step's IQ2_XXS experts slower on the
// H200: 0.688 → 0.919 ms per step; the fill and its barrier sit on each short workgroup's path.)
// decodeq: the group's signed grid magnitudes and its scale (row · x = db · Σ (±mag)·x).
// decodeqs: the magnitudes times the sub-block's 2·ls + 1 (≤ 31 · 43 = 1333, exact in f16) and
// the block's d / 8, one scale per 256 values (mmc.glsl's SCALED products)
#define DECODE_Q
#define DECODE_SCALED 256u
#define DECODE_RAW
// rawq: the words of d, of the sub-block's signs-and-scale u32 and of the group's grid index
void rawq(uint o, uint g, out uvec4 r) {
  uint bo = o + 66u * (g >> 5), p = bo + 2u + 8u * ((g & 31u) >> 2), i = (p + 4u) >> 2;
  r = uvec4(W[bo >> 2], W[i], wword(i + 1u), W[(p + (g & 3u)) >> 2]);
}
// the group's signed grid magnitudes, its sub-block's 4-bit scale and the block's d
void iq2xxsGroup(uvec4 r, uint o, uint g, out float q[8], out uint ls, out float d) {
  uint bo = o + 66u * (g >> 5), l = g & 3u, p = bo + 2u + 8u * ((g & 31u) >> 2);
  uint aux = ((p + 4u) & 2u) != 0u ? (r.y >> 16) | (r.z << 16) : r.y;
  d = unpackHalf2x16((bo & 2u) != 0u ? r.x >> 16 : r.x & 0xFFFFu).x;
  ls = aux >> 28;
  uint signs = ksigns((aux >> (7u * l)) & 127u);
  uvec2 gr = GRID[IQ2XXS_GRID_AT + ((r.w >> (((p + l) & 3u) * 8u)) & 0xFFu)];
  [[unroll]] for (uint k = 0u; k < 8u; k++) {
    float mag = float(((k < 4u ? gr.x : gr.y) >> (8u * (k & 3u))) & 0xFFu);
    q[k] = ((signs >> k) & 1u) != 0u ? -mag : mag;
  }
}
void decodeqr(uvec4 r, uint o, uint g, out float q[8], out vec2 sc) {
  uint ls;
  float d;
  iq2xxsGroup(r, o, g, q, ls, d);
  sc = vec2(d * (0.5 + float(ls)) * 0.25, 0.0);
}
void decodeqsr(uvec4 r, uint o, uint g, out float q[8], out vec2 sc) {
  uint ls;
  float d;
  iq2xxsGroup(r, o, g, q, ls, d);
  float m = float(2u * ls + 1u);
  [[unroll]] for (uint k = 0u; k < 8u; k++) q[k] *= m;
  sc = vec2(d * 0.125, 0.0);
}
void decodeqs(uint o, uint g, out float q[8], out vec2 sc) { uvec4 r; rawq(o, g, r); decodeqsr(r, o, g, q, sc); }
#elif defined(TYPE_Q4_0) || defined(TYPE_IQ4_NL)
// 18-byte blocks: f16 d, 16 bytes of nibbles; Q4_0: d·(q − 8), IQ4_NL: d·kvalues_iq4nl[q]
void decode(uint o, uint g, out float w[8]) {
  uint bo = o + 18u * (g >> 2), n[8];
  float d = WHALF(W, bo);
  nibbles(bo + 2u, g & 3u, n);
#if defined(TYPE_Q4_0)
  [[unroll]] for (uint i = 0u; i < 8u; i++) w[i] = d * float(int(n[i]) - 8);
#else
  [[unroll]] for (uint i = 0u; i < 8u; i++) w[i] = d * kvalue(n[i]);
#endif
}
#elif defined(TYPE_Q4_1)
// 20-byte blocks: f16 d, f16 m, 16 bytes of nibbles: q·d + m
void decode(uint o, uint g, out float w[8]) {
  uint bo = o + 20u * (g >> 2), n[8];
  float d = WHALF(W, bo), m = WHALF(W, bo + 2u);
  nibbles(bo + 4u, g & 3u, n);
  [[unroll]] for (uint i = 0u; i < 8u; i++) w[i] = float(n[i]) * d + m;
}
#elif defined(TYPE_Q5_0)
// 22-byte blocks: f16 d, u32 qh (fifth bits), 16 bytes of nibbles: d·(q − 16)
void decode(uint o, uint g, out float w[8]) {
  uint bo = o + 22u * (g >> 2), n[8];
  float d = WHALF(W, bo);
  nibbles(bo + 6u, g & 3u, n);
  fifth(bo + 2u, g & 3u, n);
  [[unroll]] for (uint i = 0u; i < 8u; i++) w[i] = d * float(int(n[i]) - 16);
}
#elif defined(TYPE_Q5_1)
// 24-byte blocks: f16 d, f16 m, u32 qh, 16 bytes of nibbles: q·d + m
void decode(uint o, uint g, out float w[8]) {
  uint bo = o + 24u * (g >> 2), n[8];
  float d = WHALF(W, bo), m = WHALF(W, bo + 2u);
  nibbles(bo + 8u, g & 3u, n);
  fifth(bo + 4u, g & 3u, n);
  [[unroll]] for (uint i = 0u; i < 8u; i++) w[i] = float(n[i]) * d + m;
}
#elif defined(TYPE_Q3_K)
// 110-byte blocks: hmask[32], qs[64] (2-bit parts as in Q2_K), 12 bytes of 6-bit scales (offset
// 32), f16 d. Value i: d·sc·(q2 − (hmask[i%32] bit i/32 ? 0 : 4)); scale i/16.
void decode(uint o, uint g, out float w[8]) {
  uint bo = o + 110u * (g >> 5), i0 = 8u * (g & 31u);
  uint h = i0 >> 7, k = (i0 & 127u) >> 5, l0 = i0 & 31u, j = i0 >> 4;
  uint lo4 = j < 8u ? WBYTE(W, bo + 96u + j) & 15u : WBYTE(W, bo + 88u + j) >> 4;
  uint hi2 = (WBYTE(W, bo + 104u + (j & 3u)) >> (2u * (j >> 2))) & 3u;
  float dl = WHALF(W, bo + 108u) * float(int(lo4 | (hi2 << 4)) - 32);
  uint qo = bo + 32u + 32u * h + l0, sh = 2u * k;
  uint a = WU32(W, qo), c = WU32(W, qo + 4u), ma = WU32(W, bo + l0), mc = WU32(W, bo + l0 + 4u);
  uint hb = i0 >> 5;
  [[unroll]] for (uint i = 0u; i < 4u; i++) {
    w[i] = dl * float(int((a >> (8u * i + sh)) & 3u) - (((ma >> (8u * i + hb)) & 1u) != 0u ? 0 : 4));
    w[i + 4u] = dl * float(int((c >> (8u * i + sh)) & 3u) - (((mc >> (8u * i + hb)) & 1u) != 0u ? 0 : 4));
  }
}
#elif defined(TYPE_IQ2_XS)
// 74-byte blocks: f16 d, u16 qs[32] (9-bit iq2xs_grid index, 7-bit ksigns index), scales[8]
void decode(uint o, uint g, out float w[8]) {
  uint bo = o + 74u * (g >> 5), t = g & 31u, ib = t >> 2;
  uint v = WU16(W, bo + 2u + 2u * t), sc = WBYTE(W, bo + 66u + ib);
  float db = WHALF(W, bo) * (0.5 + float(((t & 3u) < 2u) ? sc & 15u : sc >> 4)) * 0.25;
  uint signs = ksigns(v >> 9);
  uvec2 gr = GRID[IQ2XS_GRID_AT + (v & 511u)];
  [[unroll]] for (uint k = 0u; k < 8u; k++) { float m = db * float(unitByte(gr, k)); w[k] = ((signs >> k) & 1u) != 0u ? -m : m; }
}
#elif defined(TYPE_IQ2_S)
// 82-byte blocks: f16 d, qs[32] grid low bytes, 32 sign bytes, qh[8] (2 high index bits per
// group), scales[8] (a nibble per pair of groups): db = d·(0.5 + nibble)·0.25, iq2s_grid
void decode(uint o, uint g, out float w[8]) {
  uint bo = o + 82u * (g >> 5), t = g & 31u, ib = t >> 2, l = t & 3u;
  uint sc = WBYTE(W, bo + 74u + ib);
  float db = WHALF(W, bo) * (0.5 + float(l < 2u ? sc & 15u : sc >> 4)) * 0.25;
  uint idx = WBYTE(W, bo + 2u + t) | (((WBYTE(W, bo + 66u + ib) >> (2u * l)) & 3u) << 8);
  uint signs = WBYTE(W, bo + 34u + t);
  uvec2 gr = GRID[IQ2S_GRID_AT + idx];
  [[unroll]] for (uint k = 0u; k < 8u; k++) { float m = db * float(unitByte(gr, k)); w[k] = ((signs >> k) & 1u) != 0u ? -m : m; }
}
#elif defined(TYPE_IQ3_XXS)
// 98-byte blocks: f16 d, qs[64] (iq3xxs_grid indices, 2 per group), u32 w[8] (4 ksigns indices
// and a 4-bit scale per sub-block): db = d·(0.5 + scale)·0.5
void decode(uint o, uint g, out float w[8]) {
  uint bo = o + 98u * (g >> 5), t = g & 31u, ib = t >> 2, l = t & 3u;
  uint aux = WU32(W, bo + 66u + 4u * ib);
  float db = WHALF(W, bo) * (0.5 + float(aux >> 28)) * 0.5;
  uint signs = ksigns((aux >> (7u * l)) & 127u);
  uint g0 = grid32(IQ3XXS_GRID_AT, WBYTE(W, bo + 2u + 2u * t)), g1 = grid32(IQ3XXS_GRID_AT, WBYTE(W, bo + 3u + 2u * t));
  [[unroll]] for (uint k = 0u; k < 8u; k++) {
    float m = db * float(((k < 4u ? g0 : g1) >> (8u * (k & 3u))) & 0xFFu);
    w[k] = ((signs >> k) & 1u) != 0u ? -m : m;
  }
}
#elif defined(TYPE_IQ3_S)
// 110-byte blocks: f16 d, qs[64] (grid low bytes, 2 per group), qh[8] (a high bit per index),
// signs[32], scales[4] (a nibble per sub-block): db = d·(1 + 2·nibble), iq3s_grid
void decode(uint o, uint g, out float w[8]) {
  uint bo = o + 110u * (g >> 5), t = g & 31u, ib = t >> 2, l = t & 3u;
  float db = WHALF(W, bo) * float(1u + 2u * ((WBYTE(W, bo + 106u + (ib >> 1)) >> (4u * (ib & 1u))) & 15u));
  uint qh = WBYTE(W, bo + 66u + ib);
  uint g0 = grid32(IQ3S_GRID_AT, WBYTE(W, bo + 2u + 2u * t) | (((qh >> (2u * l)) & 1u) << 8));
  uint g1 = grid32(IQ3S_GRID_AT, WBYTE(W, bo + 3u + 2u * t) | (((qh >> (2u * l + 1u)) & 1u) << 8));
  uint signs = WBYTE(W, bo + 74u + t);
  [[unroll]] for (uint k = 0u; k < 8u; k++) {
    float m = db * float(((k < 4u ? g0 : g1) >> (8u * (k & 3u))) & 0xFFu);
    w[k] = ((signs >> k) & 1u) != 0u ? -m : m;
  }
}
#elif defined(TYPE_IQ1_S) || defined(TYPE_IQ1_M)
// IQ1_S, 50-byte blocks: f16 d, qs[32] (grid low bytes), u16 qh[8] (per sub-block: 3 high index
// bits per group, a 3-bit scale at bit 12, the delta's sign at bit 15).
// IQ1_M, 56-byte blocks: qs[32], qh[16] (per group a nibble: 3 high index bits, the delta's sign),
// u16 scales[4] (two 3-bit scales per sub-block; the f16 d in the words' top nibbles).
// Both: y = d·(2·scale + 1)·(g + ±1/8), g the int8 values of iq1s_grid.
const float IQ1_DELTA = 0.125;
void decode(uint o, uint g, out float w[8]) {
  uint t = g & 31u, ib = t >> 2, l = t & 3u;
#if defined(TYPE_IQ1_S)
  uint bo = o + 50u * (g >> 5), qh = WU16(W, bo + 34u + 2u * ib);
  float dl = WHALF(W, bo) * float(2u * ((qh >> 12) & 7u) + 1u);
  float delta = (qh & 0x8000u) != 0u ? -IQ1_DELTA : IQ1_DELTA;
  uint idx = WBYTE(W, bo + 2u + t) | (((qh >> (3u * l)) & 7u) << 8);
#else
  uint bo = o + 56u * (g >> 5);
  uint s0 = WU16(W, bo + 48u), s1 = WU16(W, bo + 50u), s2 = WU16(W, bo + 52u), s3 = WU16(W, bo + 54u);
  float d = unpackHalf2x16((s0 >> 12) | ((s1 >> 8) & 0xF0u) | ((s2 >> 4) & 0xF00u) | (s3 & 0xF000u)).x;
  uint sc = WU16(W, bo + 48u + 2u * (ib >> 1));
  float dl = d * float(2u * ((sc >> (6u * (ib & 1u) + (l < 2u ? 0u : 3u))) & 7u) + 1u);
  uint h = WBYTE(W, bo + 32u + 2u * ib + (l >> 1)) >> (4u * (l & 1u));
  float delta = (h & 8u) != 0u ? -IQ1_DELTA : IQ1_DELTA;
  uint idx = WBYTE(W, bo + t) | ((h & 7u) << 8);
#endif
  uvec2 gr = GRID[IQ1S_GRID_AT + idx];
  [[unroll]] for (uint k = 0u; k < 8u; k++) w[k] = dl * (float(int(unitByte(gr, k) << 24) >> 24) + delta);
}
#elif defined(TYPE_IQ4_XS)
// 136-byte blocks: f16 d, u16 scales_h, scales_l[4], qs[128] (16 bytes of nibbles per sub-block):
// dl = d·(6-bit scale − 32), y = dl·kvalues_iq4nl[q]
void decode(uint o, uint g, out float w[8]) {
  uint bo = o + 136u * (g >> 5), t = g & 31u, ib = t >> 2, n[8];
  uint ls = ((WBYTE(W, bo + 4u + (ib >> 1)) >> (4u * (ib & 1u))) & 15u) | (((WU16(W, bo + 2u) >> (2u * ib)) & 3u) << 4);
  float dl = WHALF(W, bo) * float(int(ls) - 32);
  nibbles(bo + 8u + 16u * ib, t & 3u, n);
  [[unroll]] for (uint i = 0u; i < 8u; i++) w[i] = dl * kvalue(n[i]);
}
#else
#error "decode.glsl: no TYPE_ define"
#endif
#if defined(DECODE_RAW) && defined(DECODE_Q)
// the group's quant values and scale straight from memory
void decodeq(uint o, uint g, out float q[8], out vec2 sc) { uvec4 r; rawq(o, g, r); decodeqr(r, o, g, q, sc); }
#endif
#if defined(DECODE_Q)
// the weights of a type that decodes as quant values and a scale (and a min): w = d·q (− m), the
// expression the decoders had before decodeq (the tiled mm and the decoder tests read these);
// DECODE_RAW: decoder gives them from rawq's words
#if defined(DECODE_RAW)
void decoder(uvec4 r, uint o, uint g, out float w[8]) {
  float q[8];
  vec2 sc;
  decodeqr(r, o, g, q, sc);
#else
void decode(uint o, uint g, out float w[8]) {
  float q[8];
  vec2 sc;
  decodeq(o, g, q, sc);
#endif
#if defined(DECODE_MIN)
  [[unroll]] for (uint i = 0u; i < 8u; i++) w[i] = sc.x * q[i] - sc.y;
#else
  [[unroll]] for (uint i = 0u; i < 8u; i++) w[i] = sc.x * q[i];
#endif
}
#endif
#if defined(DECODE_RAW)
// RAWW: what rawq loads (uvec4 unless the type says otherwise)
#ifndef RAWW
#define RAWW uvec4
#endif
void decode(uint o, uint g, out float w[8]) { RAWW r; rawq(o, g, r); decoder(r, o, g, w); }
#endif
