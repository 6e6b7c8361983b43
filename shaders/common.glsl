// Shared helpers. Quantized data is bound as uint words; blocks are only 2-byte aligned
// (Q8_0 is 34 bytes), so bytes, halves and 32-bit fields are read by offset.
#extension GL_EXT_control_flow_attributes : enable

#define WBYTE(buf, off) ((buf[(off) >> 2] >> (((off) & 3u) * 8u)) & 0xFFu)
#define WSBYTE(buf, off) (int(WBYTE(buf, off) << 24) >> 24)
#define WU16(buf, off) ((((off) & 2u) != 0u) ? (buf[(off) >> 2] >> 16) : (buf[(off) >> 2] & 0xFFFFu))
#define WHALF(buf, off) unpackHalf2x16(WU16(buf, off)).x
#define WU32(buf, off) (((off) & 3u) == 0u ? buf[(off) >> 2] : (WU16(buf, off) | (WU16(buf, (off) + 2u) << 16)))

float sigmoidf(float x) { return 1.0 / (1.0 + exp(-x)); }
float siluf(float x) { return x * sigmoidf(x); }
float softplusf(float x) { return x > 20.0 ? x : log(1.0 + exp(x)); }
// Small integers to float without a conversion instruction: 2^23 + b has b in its mantissa, so
// the subtraction gives b exactly (b < 2^22). NVIDIA converts int → float at 16 per SM per clock,
// an eighth of its FMA rate, and the decoders convert every weight: the conversion, not the
// bytes, capped every type's matvec at ~2.2·10^12 weights/s on the H200.
// ufl(b) = float(b); uflm(b, k) = float(b) − k for an integer constant k < 2^22 (one subtraction);
// sfl8(b) = the int8 whose two's-complement byte is b's low 8 bits.
float ufl(uint b) { return uintBitsToFloat(0x4B000000u | b) - 8388608.0; }
#define uflm(b, k) (uintBitsToFloat(0x4B000000u | (b)) - (8388608.0 + (k)))
float sfl8(uint b) { return uintBitsToFloat(0x4B000000u | ((b & 0xFFu) ^ 0x80u)) - 8388736.0; }
