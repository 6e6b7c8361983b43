#!/usr/bin/env bash
# #44 experiment: the engine's plain scaled mmc module (Q8_0) with each span's row scales applied
# to each element by its index (IDX_SCALES, which the GLU modules define themselves) instead of
# through a 16 × 16 scale matrix in the subgroup's scratch, compiled into build/runtime-shaders/ as mmi_<type> for
# bench-mmc --variant mmi --variant-spv build/runtime-shaders (checked on lavapipe:
# scripts/check/lavapipe-coopmat.sh dist/scripts/check/mmc-check.js --fragment 8 --define IDX_SCALES)
set -euo pipefail
G=$(bash scripts/build/glslc-coopmat.sh)
O=build/runtime-shaders
mkdir -p $O
c() { "$G" --target-env=vulkan1.2 -O -I shaders -DTYPE_$2 -DIDX_SCALES -o $O/$3.spv shaders/$1.comp; echo "built $3"; }
c mmc Q8_0 mmi_q8_0
