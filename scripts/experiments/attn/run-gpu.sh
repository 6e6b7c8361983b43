#!/usr/bin/env bash
# The attention experiments in one device call (run on the device machine from the repository
# root, after `bash scripts/experiments/attn/build.sh` and `npm run build` here; carry .device,
# dist, build and native-vk/build/Release, or the addon as ADDON.xz):
#   source .device/setup.sh && bash scripts/experiments/attn/run-gpu.sh [VARIANT_ADDON.node.xz]
# 1. bench-attn-tile: each build/runtime-shaders/attn module beside the engine's attn_mmc (their
#    outputs compared, registers and shared memory from the driver), blocks 256 / 1024 / 2048;
# 2. with VARIANT_ADDON (an addon whose attn_mmc is built another way, e.g. `#define NT 256` with
#    kernels.ts's local to match): bench-vk and the depth-30K step profile with it, then with the
#    engine's addon, in the same lease, and vk-parity with it.
# Everything is printed and, where $OUT is set, written to $OUT/attn-gpu.txt.
set -uo pipefail
VARIANT=${1:-}
MODEL=/tmp/full-q2.gguf
ADDON=native-vk/build/Release/q36vk.node
source scripts/lib/device-log.sh attn-gpu
run node dist/scripts/bench/bench-attn-tile.js --pos 2048,8192,16384,30720 --blk 256,1024,2048 --kernels attn_mmc --variant-spv build/runtime-shaders/attn --stats
[ -n "$VARIANT" ] || exit 0
[ -s "$MODEL" ] || run node dist/scripts/models/make-model.js --preset full --recipe q2 --out "$MODEL" --quiet
end_to_end() {
  run node dist/scripts/bench/bench-vk.js -m "$MODEL" --frontiers 8192,10240,30720,32768 --gen 8 --prefill 512,2048
  run node dist/scripts/bench/profile-vk.js -m "$MODEL" --ctx 32771 --prefill 32768
}
cp "$ADDON" /tmp/engine.node
say "# the variant addon ($VARIANT)"
xz -dc "$VARIANT" > "$ADDON"
run node dist/scripts/check/vk-parity.js fixtures
end_to_end
say "# the engine's addon"
cp /tmp/engine.node "$ADDON"
end_to_end
say "# done $(date -u +%FT%TZ)"
