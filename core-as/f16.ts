// Half-precision conversions. Decoding uses a 65536-entry table (256 KiB, built once at start):
// exact for subnormals, which some GPUs flush but the reference must not.

const F16_TABLE: usize = memory.data(65536 * 4);

function buildF16Table(): void {
  for (let h: u32 = 0; h < 65536; h++) {
    const sign = (h & 0x8000) << 16;
    const exp = (h >> 10) & 0x1f;
    const mant = h & 0x3ff;
    let bits: u32;
    if (exp == 0) {
      // subnormal: mant · 2^-24, exact in f32
      const v: f32 = <f32>mant * reinterpret<f32>(0x33800000);
      bits = reinterpret<u32>(v) | sign;
    } else if (exp == 31) {
      bits = sign | 0x7f800000 | (mant << 13);
    } else {
      bits = sign | ((exp + 112) << 23) | (mant << 13);
    }
    store<u32>(F16_TABLE + (<usize>h << 2), bits);
  }
}
buildF16Table();

// @ts-ignore: decorator
@inline export function f16(h: u32): f32 {
  return load<f32>(F16_TABLE + (<usize>(h & 0xffff) << 2));
}

// @ts-ignore: decorator
@inline export function bf16(h: u32): f32 {
  return reinterpret<f32>(h << 16);
}

/** f32 → f16 bits, round to nearest even; overflow → Inf (ggml's converter). */
export function f32ToF16(v: f32): u32 {
  const x = reinterpret<u32>(v);
  const sign = (x >> 16) & 0x8000;
  const exp = <i32>((x >> 23) & 0xff);
  let mant = x & 0x7fffff;
  if (exp == 0xff) return sign | 0x7c00 | (mant != 0 ? 0x200 : 0);
  const e = exp - 127 + 15;
  if (e >= 0x1f) return sign | 0x7c00;
  if (e <= 0) {
    if (e < -10) return sign;
    mant |= 0x800000;
    const shift = <u32>(14 - e);
    let h = mant >> shift;
    const rem = mant & ((1 << shift) - 1);
    const half: u32 = 1 << (shift - 1);
    if (rem > half || (rem == half && (h & 1) != 0)) h++;
    return sign | h;
  }
  let h = (<u32>e << 10) | (mant >> 13);
  const rem = mant & 0x1fff;
  if (rem > 0x1000 || (rem == 0x1000 && (h & 1) != 0)) h++;
  return sign | h;
}
