// Weight decoders shared by matvec.glsl and mm.glsl: decode(o, g, w) gives the 8 values of group g
// (values 8g … 8g+7) of the row starting at byte o of W, for the weight type TYPE_*. The including
// shader declares W (uint words) and, for IQ2_XXS, GRID (uvec2 per grid entry).
// Block layouts: quant-spec §3.
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
#error "decode.glsl: no TYPE_ define"
#endif
