// The tiled matmuls' interface (mm.glsl, mmh.glsl, mmc.glsl): the matvec family's bindings and
// push block, and with MOE the expert tiles of moe_tiles.comp.
layout(std430, binding = 0) readonly buffer WB { uint W[]; };
layout(std430, binding = 1) readonly buffer XB { float X[]; };
layout(std430, binding = 2) writeonly buffer YB { float Y[]; };
layout(std430, binding = 3) readonly buffer LB { uint LIST[]; };
layout(std430, binding = 4) readonly buffer GB { uvec2 GRID[]; };
#ifdef MOE
layout(std430, binding = 5) readonly buffer TB { uvec4 TILES[]; };
#endif
#include "matvec_push.glsl"
