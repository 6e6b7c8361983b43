#version 450
// matmul: eight activation rows per workgroup share each decoded weight group (batched decode
// steps of 5-8 sessions, short prefill weights; Q8_0's 5-8 rows run as two matmul4 workgroups,
// graph.ts SPLIT8_TYPES says why). Two weight rows per workgroup: with four, the
// 4 × 8 sums and 8 × 8 activations took 156 registers a thread on the H200 (6 workgroups an SM);
// with two, 80 (bench-matvec-bw --batch 8, 2026-12-02: Q8_0 LM head 886.6 → 731.5 µs, DeltaNet
// in-projection 49.9 → 45.4 µs; IQ2_XXS 1374 → 758 µs). One row: 42 registers but slower
// (1182.8 µs: each activation group is loaded for one row). A row's sums are the same either way.
// See matvec.glsl.
#define TOKENS_N 8
#define ROWS_N 2u
#include "matvec.glsl"
