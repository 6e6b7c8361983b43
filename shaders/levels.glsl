// Activation rows as three int8 levels per 32 values, for mvq.comp (written by rmsnorm.comp's quant
// and quant.comp): x ≈ s0·a0 + s1·a1 + s2·a2 with s0 = amax/127 of the 32 values and each next scale
// 1/254 of the last (a level's residual is at most half its scale, so the next level's values stay
// within ±127): the representation error is about amax·2^-24, f32's own rounding of the largest.
// Layout: XQ words [row][level][half][unit][4] (mvq.comp loads a half of a unit's level as one
// uvec4, a warp's loads one contiguous run); XS [row][unit] = (s0, s1, s2, 0).
// The including shader declares XQ (uint words) and XS (vec4), writable, and enables
// GL_KHR_shader_subgroup_shuffle.

// word w (values 4w … 4w+3, v) of unit u of row `row` (nu units a row), called by the unit's 8
// threads together, w = invocation index % 8: 8 consecutive invocations of one subgroup (its size
// a power of two ≥ 8, limits.ts). The unit's amax: each thread's 4 values, then 3 exchanges (max is
// exact in any order). Word 0's thread also writes the scales.
void writeLevels(uint row, uint nu, uint u, uint w, vec4 v) {
  vec4 av = abs(v);
  float amax = max(max(av.x, av.y), max(av.z, av.w));
  [[unroll]] for (uint m = 1u; m < 8u; m <<= 1) amax = max(amax, subgroupShuffleXor(amax, m));
  vec3 sc = vec3(amax / 127.0, 0.0, 0.0);
  sc.y = sc.x / 254.0;
  sc.z = sc.y / 254.0;
  [[unroll]] for (uint k = 0u; k < 3u; k++) {
    vec4 a = sc[k] > 0.0 ? clamp(roundEven(v / sc[k]), -127.0, 127.0) : vec4(0.0);
    v -= a * sc[k];
    ivec4 ia = ivec4(a);
    XQ[(((row * 3u + k) * 2u + (w >> 2)) * nu + u) * 4u + (w & 3u)] = uint(ia.x & 255) | (uint(ia.y & 255) << 8) | (uint(ia.z & 255) << 16) | (uint(ia.w & 255) << 24);
  }
  if (w == 0u) XS[row * nu + u] = vec4(sc, 0.0);
}
