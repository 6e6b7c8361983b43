// What deltanet_prep.comp and deltanet_chunk.comp share: the per-block record the first writes and
// the second reads (C tokens a block, DB_LEN floats a (block, value head), the parts at these
// offsets: deltanet_prep.comp says what each holds), the shared-memory row stride of a block's q
// and k rows, and the 8-lane sum both use.
const uint C = 16u;
const uint DB_G = 0u, DB_BT = C, DB_NRM = 2u * C, DB_TM = 4u * C, DB_QK = 4u * C + C * C, DB_LEN = 4u * C + 2u * C * C;
// q and k rows of a block in shared memory as vec4s: a row stride of 33 vec4s (132 floats) spreads
// the row reads over the banks
const uint KP = 33u;

// the sum over 8 adjacent lanes (a column's row parts in deltanet_chunk; a row's parts in the norms)
float sum8(float x) {
  x += subgroupShuffleXor(x, 1u);
  x += subgroupShuffleXor(x, 2u);
  return x + subgroupShuffleXor(x, 4u);
}
