#!/usr/bin/env bash
# Prefill-attention experiments of #44 (attn_mmc.comp built with other defines), compiled here into
# build/runtime-shaders/attn/ for bench-attn-tile --variant-spv build/runtime-shaders/attn:
#   attn_mmx512_q8_0_q4_0 (512 threads a workgroup: half the accumulators a subgroup)
set -euo pipefail
G=$(bash scripts/build/glslc-coopmat.sh)
O=build/runtime-shaders/attn
mkdir -p $O
c() { "$G" --target-env=vulkan1.2 -O -I shaders -DKT=2 -DVT=3 "${@:2}" -o $O/$1_q8_0_q4_0.spv shaders/attn_mmc.comp; echo "built $1"; }
c attn_mmx512 -DNT=512
