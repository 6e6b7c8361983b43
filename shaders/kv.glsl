// KV cache row element access for one cache type (KV_F32 / KV_F16 / KV_Q8_0 / KV_Q4_0), from a
// uint-word buffer. Row layout = the CPU engine's = the session payload's.
#if defined(KV_F32)
float kv_get_(uint ro, uint d) { return uintBitsToFloat(KVBUF[(ro >> 2) + d]); }
#elif defined(KV_F16)
float kv_get_(uint ro, uint d) { return WHALF(KVBUF, ro + 2u * d); }
#elif defined(KV_Q8_0)
float kv_get_(uint ro, uint d) { uint o = ro + (d >> 5) * 34u; return WHALF(KVBUF, o) * float(WSBYTE(KVBUF, o + 2u + (d & 31u))); }
#elif defined(KV_Q4_0)
float kv_get_(uint ro, uint d) {
  uint o = ro + (d >> 5) * 18u, e = d & 31u;
  uint q = e < 16u ? (WBYTE(KVBUF, o + 2u + e) & 15u) : (WBYTE(KVBUF, o + 2u + e - 16u) >> 4);
  return WHALF(KVBUF, o) * float(int(q) - 8);
}
#else
#error "no KV_ type"
#endif
