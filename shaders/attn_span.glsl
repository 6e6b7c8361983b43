// The key positions of one decode attention block, from the step's base block (push blk) and the
// token's position: doubled, up to 512, while the context would take more than 96 blocks, so a
// deep context runs fewer, longer workgroups. Each block pays once for its query rows, its
// partial sums and the merge's reads of them; one workgroup's time grows with its positions far
// less than linearly while the blocks still fill the GPU (bench-attn on the H200, 2026-12-03:
// 64 positions a block are best to 4K, 128 at 8K, 256 at 16K, 512 at 32K). attn_flash and
// attn_merge both call this when their push says grow (decode steps; prefill blocks are fixed),
// so they agree on the blocks; the recorded grid (⌈ctx / blk⌉ blocks) covers the base block, and
// longer blocks leave its last workgroups idle.
uint attnSpan(uint p, uint blk, uint grow) {
  uint b = blk;
  if (grow != 0u) while (b < 512u && p + 1u > 96u * b) b *= 2u;
  return b;
}
