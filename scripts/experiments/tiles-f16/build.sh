#!/usr/bin/env bash
# The packed-f16 tiles (shaders/mmh.glsl; #44, the BC-250's arithmetic) with their f16 partial sums
# added to the f32 sums every SPAN 32-value steps (the engine's: 1), compiled here into
# build/runtime-shaders/f16/ for
#   node dist/scripts/bench/bench-mmc.js --variant-of mm --variant hS --variant-spv build/runtime-shaders/f16
# which times each beside mm and prints the largest |Δ| of its outputs from mm's (relative to the
# largest output). hS_<type> (dense, mmh.comp's tile) and hS_moe_<type> (routed, mmh_moe.comp's).
set -euo pipefail
O=build/runtime-shaders/f16
mkdir -p $O
for s in 1 2 4; do
  for t in q8_0 iq2_xxs q2_k; do
    T=${t^^}
    glslc --target-env=vulkan1.2 -O -I shaders -DTYPE_$T -DSPAN=${s}u -o $O/h${s}_$t.spv shaders/mmh.comp
    glslc --target-env=vulkan1.2 -O -I shaders -DTYPE_$T -DSPAN=${s}u -o $O/h${s}_moe_$t.spv shaders/mmh_moe.comp
  done
  echo "built h$s"
done
