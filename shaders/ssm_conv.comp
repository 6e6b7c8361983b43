#version 450
// ssm_conv: causal depthwise conv (width w ≤ 8: w−1 history + current) over the T tokens of a
// chunk, then SiLU, in place on U (T × convCh); the history (pre-conv inputs, oldest first) is
// updated. Thread mapping: a workgroup owns NC = 32 channels; its 256 threads are 32 channels × 8
// token lanes. Tokens go in tiles of 64: the tile's inputs (and the w−1 before it) are staged in
// shared memory, so the in-place outputs cannot clobber an input another lane still needs, and the
// 8 lanes split the tile's tokens (a thread per channel walking all T tokens in order made a
// 512-token chunk 0.37 ms a layer on the H200; 64 channels × 4 lanes left a multiprocessor one
// workgroup: docs/vulkan.md). Dispatch: (⌈convCh / 32⌉, 1, 1); ssm_conv_rows: (⌈convCh / 32⌉,
// rows, 1), the row's one token (rows.glsl). Draft steps (speculative decoding)
// keep the history after each of the first ckRows tokens (≤ 64) in CK, token t at t·stride with
// stride = convCh·(w−1) rounded up to 64 floats (views of it stay aligned for the copy back).
#extension GL_GOOGLE_include_directive : enable
#include "common.glsl"
#include "rows.glsl"
layout(local_size_x = 256) in;
#define ROW ROW_AT(gl_WorkGroupID.y)
layout(std430, binding = 0) buffer UB { float U[]; };
layout(std430, binding = 1) readonly buffer CB { float CW[]; };
layout(std430, binding = 2) buffer HB { float HIST_[]; } hb_r[BATCH];
#define HIST hb_r[ROW].HIST_
layout(std430, binding = 3) writeonly buffer KB { float CK[]; };
layout(push_constant) uniform PC { uint convCh; uint T; uint width; uint ckRows; } pc;
const uint TT = 64u, MAXW = 8u, NC = 32u, LANES = 256u / NC;
shared float xs[TT + MAXW - 1u][NC];
void main() {
  uint c = gl_LocalInvocationID.x % NC, lane = gl_LocalInvocationID.x / NC;
  uint ch = gl_WorkGroupID.x * NC + c;
  bool on = ch < pc.convCh;
  uint w = pc.width, hn = w - 1u;
  float cw[MAXW];
  [[unroll]] for (uint j = 0u; j < MAXW; j++) cw[j] = on && j < w ? CW[ch * w + j] : 0.0;
  if (lane == 0u) for (uint j = 0u; j < hn; j++) xs[j][c] = on ? HIST[ch * hn + j] : 0.0;
  for (uint t0 = 0u; t0 < pc.T; t0 += TT) {
    uint n = min(TT, pc.T - t0);
    for (uint i = lane; i < n; i += LANES) xs[hn + i][c] = on ? U[(ROW + t0 + i) * pc.convCh + ch] : 0.0;
    barrier();
    for (uint i = lane; i < n; i += LANES) {
      // output t0 + i reads inputs t0 + i − hn … t0 + i: rows i … i + hn
      float acc = 0.0;
      [[unroll]] for (uint j = 0u; j < MAXW; j++) if (j < w) acc += cw[j] * xs[i + j][c];
      if (on) U[(ROW + t0 + i) * pc.convCh + ch] = siluf(acc);
      // the history after token i: inputs i − hn + 1 … i (rows i + 1 … i + hn)
      if (on && t0 + i < pc.ckRows) {
        uint ck = (t0 + i) * (((pc.convCh * hn + 63u) / 64u) * 64u) + ch * hn;
        for (uint j = 0u; j < hn; j++) CK[ck + j] = xs[i + 1u + j][c];
      }
    }
    barrier();
    // the last hn inputs (rows n … n + hn − 1) become the next tile's history rows
    if (lane == 0u) {
      float keep[MAXW];
      [[unroll]] for (uint j = 0u; j < MAXW; j++) keep[j] = j < hn ? xs[n + j][c] : 0.0;
      [[unroll]] for (uint j = 0u; j < MAXW; j++) if (j < hn) xs[j][c] = keep[j];
    }
    barrier();
  }
  if (lane == 0u && on) for (uint j = 0u; j < hn; j++) HIST[ch * hn + j] = xs[j][c];
}
