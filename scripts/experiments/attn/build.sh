#!/usr/bin/env bash
# Prefill-attention experiments of #44 (forms of attn_mmc with attn_tile's interface: they load and
# decode the caches themselves), compiled here into build/runtime-shaders/attn/ for bench-attn-tile
# --variant-spv build/runtime-shaders/attn. The forms reading operands decoded once (attn_mmg, attn_mmh
# and their decode pass, now the engine's attn_decode + attn_mmc) are in commit 73791e3.
#   attn_mma_q8_0_q4_0 (attn_mma.comp: shared memory as aliased blocks; the softmax writes the
#   tile's P as two f16 once, V staged 16 keys × every dim a step: half the barriers of P·V;
#   needs VK_KHR_workgroup_memory_explicit_layout)
#   attn_mmb_q8_0_q4_0 (attn_mma with the key scales and the rows' alphas applied to each element by
#   its index, read from a matrix of indices: no replicated 16-row scale matrices in shared memory)
#   attn_mmd_q8_0_q4_0 (attn_mmb staging S 64 dims a step: half the barriers of S)
#   attn_abl_*_q8_0_q4_0 (ablations of attn_mmd, below)
set -euo pipefail
G=$(bash scripts/build/glslc-coopmat.sh)
O=build/runtime-shaders/attn
mkdir -p $O
c() { "$G" --target-env=vulkan1.2 -O -I shaders -DKT=2 -DVT=3 "${@:3}" -o $O/$1_q8_0_q4_0.spv $2; echo "built $1"; }
c attn_mma scripts/experiments/attn/attn_mma.comp
c attn_mmb scripts/experiments/attn/attn_mma.comp -DIDX_SCALES
c attn_mmd scripts/experiments/attn/attn_mma.comp -DIDX_SCALES -DDS64
# ablations of attn_mmd (timing only: their outputs mean nothing; what each leaves out costs about
# the time it saves): no global loads, no S products, no P·V products
c attn_abl_noload scripts/experiments/attn/attn_mma.comp -DIDX_SCALES -DDS64 -DABL_NO_LOADS
c attn_abl_nos scripts/experiments/attn/attn_mma.comp -DIDX_SCALES -DDS64 -DABL_NO_S
c attn_abl_nopv scripts/experiments/attn/attn_mma.comp -DIDX_SCALES -DDS64 -DABL_NO_PV
# attn_mmd with P as one f16 (P1): two P·V products a fragment pair instead of three
c attn_mmp1 scripts/experiments/attn/attn_mma.comp -DIDX_SCALES -DDS64 -DP1
