#!/usr/bin/env bash
# Tile-shape experiments of #44 (mmc.glsl in other shapes), compiled here into
# build/runtime-shaders/ for bench-mmc --variant mmx --variant-spv build/runtime-shaders:
#   mmx_q8_0 (dense, raw loads two steps ahead), mmx_glu_q8_0 (dense GLU, 128 rows a tile),
#   mmx_moe_q2_k (routed, 128 rows a tile), mmx_moe_glu_iq2_xxs (routed GLU, one set of raw loads)
set -euo pipefail
G=$(bash scripts/build/glslc-coopmat.sh)
D=scripts/experiments/tiles O=build/runtime-shaders
mkdir -p $O
c() { "$G" --target-env=vulkan1.2 -O -I shaders -DTYPE_$2 -o $O/$3.spv $D/$1.comp; echo "built $3"; }
c mmx Q8_0 mmx_q8_0
c mmx_glu Q8_0 mmx_glu_q8_0
c mmx_moe Q2_K mmx_moe_q2_k
c mmx_moe_glu IQ2_XXS mmx_moe_glu_iq2_xxs
