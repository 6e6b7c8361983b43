#!/usr/bin/env bash
# Register-tile experiments of the f32 tiles (shaders/mm.glsl with other TM, TN; #44, the BC-250's
# arithmetic), compiled here into build/runtime-shaders/f32/ for
#   node dist/scripts/bench/bench-mmc.js --variant-of mm --variant P --variant-spv build/runtime-shaders/f32
# P_<type> is the dense form (mm.comp), P_moe_<type> the routed one (mm_moe.comp); each keeps the
# engine's BN (so the engine's dispatch and expert tiles) and leaves the workgroups past its rows
# (OVERDISPATCH: BM = 16·TM rows a tile, the engine dispatches for 64). Every output's sum is the
# engine's FMA chain in the same order, so the outputs must equal mm's bit for bit.
#   ma: TM 8, TN 4 (dense 256 threads, routed 128: 128 rows × BN a tile)
#   mb: TM 8, TN 8 (dense 128 threads, routed 64)
#   mc: TM 4, TN 8 (dense 128 threads, routed 64: the engine's 64 rows)
set -euo pipefail
O=build/runtime-shaders/f32
mkdir -p $O
c() { # name type NT BN TM [MOE]
  local moe=${6:-}
  glslc --target-env=vulkan1.2 -O -I shaders -DTYPE_$2 -DNT=$3u -DBN=$4u -DTM=$5u -DOVERDISPATCH ${moe:+-DMOE} -o $O/$1.spv scripts/experiments/tiles-f32/mm_x.comp
  echo "built $1"
}
for t in q8_0 iq2_xxs q2_k; do
  T=${t^^}
  c ma_$t $T 256 64 8;  c ma_moe_$t $T 128 32 8 MOE
  c mb_$t $T 128 64 8;  c mb_moe_$t $T 64 32 8 MOE
  c mc_$t $T 128 64 4;  c mc_moe_$t $T 64 32 4 MOE
done
