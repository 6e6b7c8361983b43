#!/usr/bin/env bash
# The recipe for GPU numbers (run on the device machine from the repository root, after
# `bash ../shared/device/prep.sh` and `npm run build` on the development machine; carry .device,
# dist, build and native-vk/build/Release):
#   source .device/setup.sh && bash scripts/bench/bench-gpu.sh [CTX_MAX] [STEP]
# Frontiers are 2048, 2048+STEP, … up to CTX_MAX (a frontier past CTX_MAX is not run): 32768 8192
# gives 2048…26624; for a 32768 row use `--step-mul 4` (2048, 8192, 32768), see docs/benchmarks.md.
set -euo pipefail
CTX_MAX=${1:-32768}
STEP=${2:-8192}
MODEL=/tmp/full-q2.gguf
[ -s "$MODEL" ] || node dist/scripts/models/make-model.js --preset full --recipe q2 --out "$MODEL" --quiet
node dist/ts/cli/q36-bench.js --vulkan -m "$MODEL" --ctx-start 2048 --ctx-max "$CTX_MAX" --step-incr "$STEP" --gen-tokens 128 --warmup 64
