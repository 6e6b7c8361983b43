#!/usr/bin/env bash
# Prefill-attention experiments of #44 (attn_mmc.comp built with other defines), compiled here into
# build/runtime-shaders/attn/ for bench-attn-tile --variant-spv build/runtime-shaders/attn:
#   attn_mmx256_q8_0_q4_0 (256 threads a workgroup, the engine's form before 2026-12-06: twice the
#   accumulators a subgroup, one workgroup a multiprocessor)
set -euo pipefail
G=$(bash scripts/build/glslc-coopmat.sh)
O=build/runtime-shaders/attn
mkdir -p $O
c() { "$G" --target-env=vulkan1.2 -O -I shaders -DKT=2 -DVT=3 "${@:2}" -o $O/$1_q8_0_q4_0.spv shaders/attn_mmc.comp; echo "built $1"; }
c attn_mmx256 -DNT=256
