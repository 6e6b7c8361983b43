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
