// Batched decode steps: the _rows variants (BATCH = the step's most rows, shaders/variants.json)
// take every row of a step in one dispatch instead of one dispatch per row. The scratch rows are
// laid out as a multi-token step's (row r = token r), so they are indexed as tokens; what is a
// session's own (its recurrent state, its KV cache, its PARAMS row: its position) is element r of
// a binding array. Each row computes exactly what its one-token dispatch computes. The plain
// kernels (BATCH 1) bind arrays of one.
#ifndef BATCH
#define BATCH 1
#endif
// the row a workgroup serves, given the grid axis rows run along (0 in the plain kernels)
#define ROW_AT(axis) (BATCH > 1 ? (axis) : 0u)
// the position of token t: the plain kernels' tokens follow PARAMS[0]; a row's token is at its own
#define POS(t) (BATCH > 1 ? PARAMS[0] : PARAMS[0] + (t))
