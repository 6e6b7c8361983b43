// Units of 32 weights for mv.comp: a unit is 4 runs of 8 values of one row; unitRun(u, k) is
// the first value of run k of unit u, and unitDot(o, u, x, xs) the unit's share of row · x (x[8k + i]
// the activation of value unitRun(u, k) + i, xs[k] the sum of run k's 8 activations, for the types
// with a min). Most types take 32 consecutive values (groups 4u … 4u + 3) through decode.glsl's
// group decoders; Q2_K, IQ2_XXS and Q8_0 decode a whole unit at once, so a unit's scale, offsets
// and loads are worked out once for 32 weights instead of once per 8.
// Included after decode.glsl (W, GRID, the TYPE_ define).

#if defined(TYPE_Q2_K)
// Q2_K: byte l of a 128-value half holds values l, l + 32, l + 64, l + 96 (2 bits each), so a
// unit is the 8 bytes at l0 = 8·(u & 3) of half h = (u >> 2) & 1 of block u >> 3, all four shifts:
// runs 128h + 32k + l0 (two aligned word loads for 32 weights; scale bytes 8h + l0/16 + 2k).
uint unitRun(uint u, uint k) { return 256u * (u >> 3) + 128u * ((u >> 2) & 1u) + 32u * k + 8u * (u & 3u); }
float unitDot(uint o, uint u, float x[32], float xs[4]) {
  uint bo = o + 84u * (u >> 3), h = (u >> 2) & 1u, l0 = 8u * (u & 3u);
  uint wq = (bo + 16u + 32u * h + l0) >> 2;
  uint qa = W[wq], qc = W[wq + 1u];
  // scale bytes 8h + l0/16 + {0, 2, 4, 6}: in the two words at 8h
  uint ws = (bo + 8u * h) >> 2, sa = W[ws], sb = W[ws + 1u], sh = 8u * (l0 >> 4);
  vec2 dm = unpackHalf2x16(W[(bo + 80u) >> 2]);
  float s = 0.0;
  [[unroll]] for (uint k = 0u; k < 4u; k++) {
    uint scb = ((k < 2u ? sa : sb) >> (sh + 16u * (k & 1u))) & 0xFFu;
    uint ta = (qa >> (2u * k)) & 0x03030303u, tc = (qc >> (2u * k)) & 0x03030303u;
    float t = 0.0;
    [[unroll]] for (uint i = 0u; i < 4u; i++) {
      t += float((ta >> (8u * i)) & 0xFFu) * x[8u * k + i];
      t += float((tc >> (8u * i)) & 0xFFu) * x[8u * k + 4u + i];
    }
    s += dm.x * float(scb & 15u) * t - dm.y * float(scb >> 4) * xs[k];
  }
  return s;
}
#elif defined(TYPE_IQ2_XXS)
// IQ2_XXS: a unit is one 8-byte sub-block (4 grid indices, then the signs and scale word)
uint unitRun(uint u, uint k) { return 32u * u + 8u * k; }
float unitDot(uint o, uint u, float x[32], float xs[4]) {
  uint bo = o + 66u * (u >> 3);
  uvec2 v = wu64e(bo + 2u + 8u * (u & 7u));
  float db = WHALF(W, bo) * (0.5 + float(v.y >> 28)) * 0.25;
  float s = 0.0;
  [[unroll]] for (uint l = 0u; l < 4u; l++) {
    uvec2 gr = GRID[IQ2XXS_GRID_AT + ((v.x >> (8u * l)) & 0xFFu)];
    uint signs = ksigns((v.y >> (7u * l)) & 127u);
    [[unroll]] for (uint k = 0u; k < 8u; k++) {
      float mag = float(((k < 4u ? gr.x : gr.y) >> (8u * (k & 3u))) & 0xFFu);
      // the sign flips the activation's sign bit (one logic op; exact)
      float sx = uintBitsToFloat(floatBitsToUint(x[8u * l + k]) ^ ((signs << (31u - k)) & 0x80000000u));
      s += mag * sx;
    }
  }
  return db * s;
}
#elif defined(TYPE_Q8_0)
// Q8_0: a unit is one 34-byte block: nine word loads (the block is 2-byte aligned) give d and the
// 32 quants
uint unitRun(uint u, uint k) { return 32u * u + 8u * k; }
float unitDot(uint o, uint u, float x[32], float xs[4]) {
  uint bo = o + 34u * u, i = bo >> 2;
  bool odd = (bo & 2u) != 0u;
  uint w[9];
  [[unroll]] for (uint k = 0u; k < 8u; k++) w[k] = W[i + k];
  w[8] = wword(i + 8u);
  float d = unpackHalf2x16(odd ? w[0] >> 16 : w[0]).x;
  float s = 0.0;
  [[unroll]] for (uint j = 0u; j < 8u; j++) {
    uint q = odd ? w[j + 1u] : (w[j] >> 16) | (w[j + 1u] << 16);
    [[unroll]] for (uint b = 0u; b < 4u; b++) s += float(int(q << (24u - 8u * b)) >> 24) * x[4u * j + b];
  }
  return d * s;
}
#else
// every other type: groups 4u … 4u + 3 through decode.glsl
uint unitRun(uint u, uint k) { return 32u * u + 8u * k; }
float unitDot(uint o, uint u, float x[32], float xs[4]) {
  float s = 0.0;
  [[unroll]] for (uint l = 0u; l < 4u; l++) {
#if defined(DECODE_Q)
    float q[8];
    vec2 sc;
    decodeq(o, 4u * u + l, q, sc);
    float t = 0.0;
    [[unroll]] for (uint i = 0u; i < 8u; i++) t += q[i] * x[8u * l + i];
#if defined(DECODE_MIN)
    s += sc.x * t - sc.y * xs[l];
#else
    s += sc.x * t;
#endif
#else
    float w[8];
    decode(o, 4u * u + l, w);
    [[unroll]] for (uint i = 0u; i < 8u; i++) s += w[i] * x[8u * l + i];
#endif
  }
  return s;
}
#endif
