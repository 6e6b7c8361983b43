#!/usr/bin/env bash
# The prefill measurement of issue #44 in one device call (run on the device machine from the
# repository root, after `bash ../shared/device/prep.sh` and `npm run build` here; carry .device,
# dist, build and native-vk/build/Release):
#   source .device/setup.sh && bash scripts/bench/prefill-gpu.sh [BASE.tar.xz]
# Parity first (mmc-check on the engine's 16 × 16 × 16 modules; vk-parity of the fixtures that
# came along, prefill vs token-by-token decode among its checks, on both paths, and the record of
# the packed-f16 tiles' error), then bench-mmc, bench-vk on every fast path and on the BC-250's
# arithmetic (Q36_VK_COOPMAT=0 Q36_VK_MVQ=0, and with Q36_VK_F16=1), and a profile of the
# 2048- and 512-token steps (and the 2048 tokens at depth 30720), q36-bench on both arithmetics and
# bench-ttft (a 25K-token prompt through the server). BASE (an older build: a .tar.xz of its
# dist/ and native-vk/build/Release/q36vk.node, the two together: the dispatch shapes live in dist, the
# shaders in the addon) runs bench-mmc, both bench-vk lines (to depth 10K) and the profiles again in
# the same lease, so before and after share one machine. Everything is printed
# and, where $OUT is set, written to $OUT/prefill-gpu.txt.
set -uo pipefail
BASE=${1:-}
MODEL=/tmp/full-q2.gguf
ADDON=native-vk/build/Release/q36vk.node
source scripts/lib/device-log.sh prefill-gpu
[ -s "$MODEL" ] || run node dist/scripts/models/make-model.js --preset full --recipe q2 --out "$MODEL" --quiet
run node dist/scripts/check/mmc-check.js
run node dist/scripts/check/vk-parity.js fixtures
say "## the f32 tiles (the fallback): Q36_VK_COOPMAT=0 Q36_VK_MVQ=0"
Q36_VK_COOPMAT=0 Q36_VK_MVQ=0 run node dist/scripts/check/vk-parity.js fixtures
# the packed-f16 tiles (opt-in): how far f16 products move the oracles' logits (a record: the
# tolerances are the exact paths')
say "## the packed-f16 tiles: Q36_VK_COOPMAT=0 Q36_VK_MVQ=0 Q36_VK_F16=1"
Q36_VK_COOPMAT=0 Q36_VK_MVQ=0 Q36_VK_F16=1 run node dist/scripts/check/vk-parity.js fixtures
# $1: bench-vk's frontiers (the base build's run leaves out depth 30K: one call stays in 10 minutes)
benches() {
  run node dist/scripts/bench/bench-mmc.js --tokens 512,2048
  run node dist/scripts/bench/bench-vk.js -m "$MODEL" --frontiers "$1" --gen 8 --prefill 512,2048
  say "## the BC-250's arithmetic: Q36_VK_COOPMAT=0 Q36_VK_MVQ=0"
  Q36_VK_COOPMAT=0 Q36_VK_MVQ=0 run node dist/scripts/bench/bench-vk.js -m "$MODEL" --frontiers 8192,10240 --gen 8 --prefill 512,2048
  say "## the BC-250's arithmetic with packed f16 products: Q36_VK_COOPMAT=0 Q36_VK_MVQ=0 Q36_VK_F16=1"
  Q36_VK_COOPMAT=0 Q36_VK_MVQ=0 Q36_VK_F16=1 run node dist/scripts/bench/bench-vk.js -m "$MODEL" --frontiers 8192,10240 --gen 8 --prefill 512,2048
}
benches 8192,10240,30720,32768
profiles() {
  run node dist/scripts/bench/profile-vk.js -m "$MODEL" --ctx 4096 --prefill 2048
  run node dist/scripts/bench/profile-vk.js -m "$MODEL" --ctx 4096 --prefill 512
  run node dist/scripts/bench/profile-vk.js -m "$MODEL" --ctx 32832 --prefill 32768
}
profiles
# the README's other rows: q36-bench on both arithmetics, the first streamed text of a 25K-token
# prompt (bench-ttft, bundled here first where node_modules is absent: its header says how)
Q="node dist/ts/cli/q36-bench.js --vulkan -m $MODEL --ctx-start 2048 --ctx-max 32768 --step-mul 4 --gen-tokens 64 --warmup 2048"
run $Q
say "## the BC-250's arithmetic: Q36_VK_COOPMAT=0 Q36_VK_MVQ=0"
Q36_VK_COOPMAT=0 Q36_VK_MVQ=0 run $Q
say "## the BC-250's arithmetic with packed f16 products: Q36_VK_COOPMAT=0 Q36_VK_MVQ=0 Q36_VK_F16=1"
Q36_VK_COOPMAT=0 Q36_VK_MVQ=0 Q36_VK_F16=1 run $Q
Q36_VK_COOPMAT=0 Q36_VK_MVQ=0 Q36_VK_F16=1 run node dist/scripts/bench/profile-vk.js -m "$MODEL" --ctx 4096 --prefill 2048
TTFT=dist/scripts/bench/bench-ttft.js
[ -d node_modules ] || TTFT=dist/scripts/bench-ttft.bundle.mjs
if [ -f "$TTFT" ]; then run node "$TTFT" -m "$MODEL" --bytes 25000 --ctx 32768; else say "# bench-ttft: no $TTFT (bundle it first)"; fi
if [ -n "$BASE" ]; then
  say "# the base build ($BASE), same lease"
  rm -rf /tmp/prefill-head && mkdir -p /tmp/prefill-head && mv dist /tmp/prefill-head/ && cp "$ADDON" /tmp/prefill-head/q36vk.node
  tar -xJf "$BASE"
  benches 8192,10240
  profiles
  rm -rf dist && mv /tmp/prefill-head/dist . && cp /tmp/prefill-head/q36vk.node "$ADDON"
fi
say "# done $(date -u +%FT%TZ)"
