// The tile slots of the tiled matmuls (mm.glsl, mmc.glsl), included twice: once at file scope
// (MM_TILE_DECL: the shared arrays), once inside main() where the slots are filled: the activation
// row each of the tile's BN slots reads (rowOf) and the output row it writes (yRow), the tile's
// weight offset (wBase) and its slots in use (count); then each thread's decode jobs (wo) and
// X-tile job (xs, xk, xo). Needs tid and r0. Dense: the chunk's rows j0 … of workgroup y
// (the last one repeated past the end: those slots' outputs are not stored). Experts (MOE): tile
// y of TILES; a workgroup without one leaves (uniform per workgroup: before any barrier, allowed).
// A fragment rather than a function: as a function it changed both kernels' SPIR-V (same size,
// other code).
#ifdef MM_TILE_DECL
shared uint rowOf[BN];   // activation row of each slot (X row; the Y row is yRow[])
shared uint yRow[BN];
#else
  uint wBase = pc.wOffset, count;
#ifdef MOE
  uvec4 tile = TILES[1u + gl_WorkGroupID.y];
  if (gl_WorkGroupID.y >= TILES[0].x) return;
  uint ei = tile.x - pc.e0;
  if (ei >= pc.ne) return;
  wBase += ei * pc.expertBytes;
  count = tile.z;
  if (tid < BN) {
    uint pair = LIST[tile.y + min(tid, count - 1u)];
    rowOf[tid] = (pc.flags & 2u) != 0u ? pair : pair / pc.K;
    yRow[tid] = pair;
  }
#else
  uint j0 = gl_WorkGroupID.y * BN;
  count = min(BN, pc.nRows - j0);
  if (tid < BN) { rowOf[tid] = j0 + min(tid, count - 1u); yRow[tid] = j0 + tid; }
#endif
  barrier();
  // this thread's decode jobs: group dg of rows dr + NT/4·q of the tile (clamped: rows past the
  // end decode a real row, their outputs are not stored)
  uint dr = tid >> 2, dg = tid & 3u;
  uint wo[DJ];
  [[unroll]] for (uint q = 0u; q < DJ; q++) wo[q] = wBase + min(r0 + dr + (NT / 4u) * q, pc.rows - 1u) * pc.rowBytes;
  // X-tile job: XL floats of slot xs from k offset xk
  uint xs = tid / (BK / XL), xk = (tid % (BK / XL)) * XL;
  uint xo = pc.xOffset + rowOf[xs] * pc.xStride + xk;
#endif
