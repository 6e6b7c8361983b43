// KV cache row element access, from a uint-word buffer. Row layout = the CPU engine's = the
// session payload's. The including shader defines KV_FN (the function's name), KVBUF (the buffer)
// and KV_T (0 f32, 1 f16, 2 q8_0, 3 q4_0), and may include this file once per cache (K and V).
// KV_FN(ro, d): element d of the row starting at byte ro.
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
#else
#error "kv.glsl: KV_T must be 0..3"
#endif
