// The per-block record deltanet_prep.comp writes and deltanet_chunk.comp reads: C tokens a block,
// DB_LEN floats a (block, value head), the parts at these offsets (deltanet_prep.comp says what
// each holds).
const uint C = 16u;
const uint DB_G = 0u, DB_BT = C, DB_NRM = 2u * C, DB_AM = 4u * C, DB_QK = 4u * C + C * C, DB_LEN = 4u * C + 2u * C * C;
