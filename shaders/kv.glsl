// KV cache row element access, from a uint-word buffer. Row layout = the CPU engine's = the
// session payload's. The including shader defines KVBUF (the buffer) and KV_T (0 f32, 1 f16,
// 2 q8_0, 3 q4_0), and the names of the accessors it uses, and may include this file once per
// cache (K and V): KV_FN(ro, d), element d of the row starting at byte ro; KV_FN4(ro, d),
// elements d … d + 3 (d a multiple of 4); KV_FN2(ro, d), elements d, d + 1 (d even). The wider
// ones give KV_FN's values with fewer loads (a quant block's scale once, its bytes as one word
// or half-word).
#if KV_T < 0 || KV_T > 3
#error "kv.glsl: KV_T must be 0..3"
#endif
#ifdef KV_FN
#if KV_T == 0
float KV_FN(uint ro, uint d) { return uintBitsToFloat(KVBUF[(ro >> 2) + d]); }
#elif KV_T == 1
float KV_FN(uint ro, uint d) { return WHALF(KVBUF, ro + 2u * d); }
#elif KV_T == 2
float KV_FN(uint ro, uint d) { uint o = ro + (d >> 5) * 34u; return WHALF(KVBUF, o) * float(WSBYTE(KVBUF, o + 2u + (d & 31u))); }
#elif KV_T == 3
float KV_FN(uint ro, uint d) {
  uint o = ro + (d >> 5) * 18u, e = d & 31u;
  uint q = e < 16u ? (WBYTE(KVBUF, o + 2u + e) & 15u) : (WBYTE(KVBUF, o + 2u + e - 16u) >> 4);
  return WHALF(KVBUF, o) * float(int(q) - 8);
}
#endif
#endif
#ifdef KV_FN4
#if KV_T == 0
vec4 KV_FN4(uint ro, uint d) { uint w = (ro >> 2) + d; return uintBitsToFloat(uvec4(KVBUF[w], KVBUF[w + 1u], KVBUF[w + 2u], KVBUF[w + 3u])); }
#elif KV_T == 1
// rows of whole words (kvDim even), so 4 halves at an even element are two words
vec4 KV_FN4(uint ro, uint d) { uint w = (ro >> 2) + (d >> 1); return vec4(unpackHalf2x16(KVBUF[w]), unpackHalf2x16(KVBUF[w + 1u])); }
#elif KV_T == 2
vec4 KV_FN4(uint ro, uint d) {
  uint o = ro + (d >> 5) * 34u;
  uint q = WU32(KVBUF, o + 2u + (d & 31u));
  return WHALF(KVBUF, o) * vec4(ivec4(q << 24, q << 16, q << 8, q) >> 24);
}
#elif KV_T == 3
// elements e … e + 3 of a block: the low nibbles of bytes e … e + 3, or the high ones of e − 16 …
vec4 KV_FN4(uint ro, uint d) {
  uint o = ro + (d >> 5) * 18u, e = d & 31u;
  uint q = WU32(KVBUF, o + 2u + (e & 15u)) >> (e < 16u ? 0u : 4u);
  return WHALF(KVBUF, o) * vec4(ivec4(uvec4(q, q >> 8, q >> 16, q >> 24) & 15u) - 8);
}
#endif
#endif
#ifdef KV_FN4Q
// KV_FN4's values as the integers of their quant block and its scale s (value = s · integer):
// exact in f16 (q8_0's −128…127, q4_0's −8…7; f16 rows: the values themselves, s = 1)
#if KV_T == 1
vec4 KV_FN4Q(uint ro, uint d, out float s) { s = 1.0; uint w = (ro >> 2) + (d >> 1); return vec4(unpackHalf2x16(KVBUF[w]), unpackHalf2x16(KVBUF[w + 1u])); }
#elif KV_T == 2
vec4 KV_FN4Q(uint ro, uint d, out float s) {
  uint o = ro + (d >> 5) * 34u;
  uint q = WU32(KVBUF, o + 2u + (d & 31u));
  s = WHALF(KVBUF, o);
  return vec4(ivec4(q << 24, q << 16, q << 8, q) >> 24);
}
#elif KV_T == 3
vec4 KV_FN4Q(uint ro, uint d, out float s) {
  uint o = ro + (d >> 5) * 18u, e = d & 31u;
  uint q = WU32(KVBUF, o + 2u + (e & 15u)) >> (e < 16u ? 0u : 4u);
  s = WHALF(KVBUF, o);
  return vec4(ivec4(uvec4(q, q >> 8, q >> 16, q >> 24) & 15u) - 8);
}
#endif
#endif
#ifdef KV_FN2
#if KV_T == 0
vec2 KV_FN2(uint ro, uint d) { uint w = (ro >> 2) + d; return uintBitsToFloat(uvec2(KVBUF[w], KVBUF[w + 1u])); }
#elif KV_T == 1
vec2 KV_FN2(uint ro, uint d) { return unpackHalf2x16(KVBUF[(ro >> 2) + (d >> 1)]); }
#elif KV_T == 2
vec2 KV_FN2(uint ro, uint d) {
  uint o = ro + (d >> 5) * 34u;
  uint q = WU16(KVBUF, o + 2u + (d & 31u));
  return WHALF(KVBUF, o) * vec2(ivec2(q << 24, q << 16) >> 24);
}
#elif KV_T == 3
vec2 KV_FN2(uint ro, uint d) {
  uint o = ro + (d >> 5) * 18u, e = d & 31u;
  uint q = WU16(KVBUF, o + 2u + (e & 15u)) >> (e < 16u ? 0u : 4u);
  return WHALF(KVBUF, o) * vec2(ivec2(uvec2(q, q >> 8) & 15u) - 8);
}
#endif
#endif
