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
// KV_FN4 and KV_FN4Q are a load and a decode: KV_FN4_raw(ro, d) loads the words they read and
// KV_FN4_dec(r, ro, d) / KV_FN4Q_dec(r, ro, d, s) decode them (names pasted onto the including
// shader's), so a kernel can issue a later step's loads and decode them when it stages that step.
// Quant rows (q8_0, q4_0) are 2-byte aligned, like their elements' bytes at even d.
#ifndef KV_XCAT
#define KV_CAT(a, b) a##b
#define KV_XCAT(a, b) KV_CAT(a, b)
#endif
#if defined(KV_FN4Q) && !defined(KV_FN4)
#error "kv.glsl: KV_FN4Q needs KV_FN4 (the pasted names start with it)"
#endif
#ifdef KV_FN4
#define KV_RAW4 KV_XCAT(KV_FN4, _raw)
#define KV_DEC4 KV_XCAT(KV_FN4, _dec)
#define KV_SCALE KV_XCAT(KV_FN4, _scale)
#define KV_INTS KV_XCAT(KV_FN4, _ints)
#if KV_T == 0
uvec4 KV_RAW4(uint ro, uint d) { uint w = (ro >> 2) + d; return uvec4(KVBUF[w], KVBUF[w + 1u], KVBUF[w + 2u], KVBUF[w + 3u]); }
vec4 KV_DEC4(uvec4 r, uint ro, uint d) { return uintBitsToFloat(r); }
#elif KV_T == 1
// rows of whole words (kvDim even), so 4 halves at an even element are two words
uvec4 KV_RAW4(uint ro, uint d) { uint w = (ro >> 2) + (d >> 1); return uvec4(KVBUF[w], KVBUF[w + 1u], 0u, 0u); }
vec4 KV_DEC4(uvec4 r, uint ro, uint d) { return vec4(unpackHalf2x16(r.x), unpackHalf2x16(r.y)); }
#else
// element d's block (its f16 scale first) and the even offset of the u32 holding elements
// d … d + 3's quant bytes
#if KV_T == 2
#define KV_BO(ro, d) ((ro) + ((d) >> 5) * 34u)
#define KV_QO(ro, d) (KV_BO(ro, d) + 2u + ((d) & 31u))
#else
#define KV_BO(ro, d) ((ro) + ((d) >> 5) * 18u)
#define KV_QO(ro, d) (KV_BO(ro, d) + 2u + ((d) & 15u))
#endif
// the word holding the block's scale, the two under the quant bytes' u32
uvec4 KV_RAW4(uint ro, uint d) {
  uint o = KV_BO(ro, d), q = KV_QO(ro, d);
  return uvec4(KVBUF[o >> 2], KVBUF[q >> 2], KVBUF[min((q >> 2) + 1u, uint(KVBUF.length()) - 1u)], 0u);
}
// the block's scale and elements d … d + 3's integers (WHALF and WU32 on the loaded words)
float KV_SCALE(uvec4 r, uint ro, uint d) { return unpackHalf2x16((KV_BO(ro, d) & 2u) != 0u ? r.x >> 16 : r.x & 0xFFFFu).x; }
vec4 KV_INTS(uvec4 r, uint ro, uint d) {
  uint q = (KV_QO(ro, d) & 2u) != 0u ? (r.y >> 16) | (r.z << 16) : r.y;
#if KV_T == 2
  return vec4(ivec4(q << 24, q << 16, q << 8, q) >> 24);
#else
  // the low nibbles of bytes e … e + 3 of the block, or the high ones of e − 16 …
  q >>= (d & 31u) < 16u ? 0u : 4u;
  return vec4(ivec4(uvec4(q, q >> 8, q >> 16, q >> 24) & 15u) - 8);
#endif
}
vec4 KV_DEC4(uvec4 r, uint ro, uint d) { return KV_SCALE(r, ro, d) * KV_INTS(r, ro, d); }
#undef KV_BO
#undef KV_QO
#endif
vec4 KV_FN4(uint ro, uint d) { return KV_DEC4(KV_RAW4(ro, d), ro, d); }
#endif
#ifdef KV_FN4Q
// KV_FN4's values as the integers of their quant block and its scale s (value = s · integer):
// exact in f16 (q8_0's −128…127, q4_0's −8…7; f16 rows: the values themselves, s = 1)
#define KV_DEC4Q KV_XCAT(KV_FN4Q, _dec)
#if KV_T == 1
vec4 KV_DEC4Q(uvec4 r, uint ro, uint d, out float s) { s = 1.0; return KV_DEC4(r, ro, d); }
#elif KV_T >= 2
vec4 KV_DEC4Q(uvec4 r, uint ro, uint d, out float s) { s = KV_SCALE(r, ro, d); return KV_INTS(r, ro, d); }
#endif
vec4 KV_FN4Q(uint ro, uint d, out float s) { return KV_DEC4Q(KV_RAW4(ro, d), ro, d, s); }
#undef KV_DEC4Q
#endif
#undef KV_RAW4
#undef KV_DEC4
#undef KV_SCALE
#undef KV_INTS
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
