#!/usr/bin/env bash
# SSD-streaming table (issue: --ssd-streaming): q36-bench at one frontier for a model, resident
# and streamed through expert caches of several sizes, with the page cache warm and cold, and
# under a device-memory cap. One line per run: the CSV row and the "experts at N" line.
#
#   [WARMUP=16] [COLD="2GB"] bash scripts/bench/bench-streaming.sh MODEL [FRONTIER=2048] [GEN=64] [CACHES="1GB 2GB 4GB"] [CAP=16GB]
# (the warm-up prefill and 2 decode steps compile the pipelines before the measured rows; COLD:
# the cache sizes also run with the page cache dropped, default the second of CACHES)
#
# Cold page cache: GNU dd's iflag=nocache with count=0 asks the kernel to drop the file's cached
# pages (posix_fadvise DONTNEED; no root needed), so the next run reads the SSD. Every streamed
# run starts with an empty expert cache (--ssd-streaming-cold) except the warm-start row, which
# preloads the hotlist the earlier runs recorded in a private HOME.
set -uo pipefail
MODEL=${1:?model}
F=${2:-2048}
GEN=${3:-64}
CACHES=${4:-"1GB 2GB 4GB"}
CAP=${5:-16GB}
BENCH="node dist/ts/cli/q36-bench.js --vulkan -m $MODEL --ctx-start $F --ctx-max $F --gen-tokens $GEN --warmup ${WARMUP:-16}"
export HOME=$(mktemp -d)
drop() { sync; dd if="$MODEL" iflag=nocache count=0 status=none || echo "(could not drop the page cache)"; }
run() {
  local label=$1; shift
  local out err
  err=$(mktemp)
  local t0=$(date +%s.%N)
  out=$($BENCH "$@" 2>"$err" | tail -1)
  local t1=$(date +%s.%N)
  printf '%-34s %s  wall %.1f s\n' "$label" "$out" "$(awk "BEGIN{print $t1 - $t0}")"
  grep -E '^experts|^q36-bench' "$err" | sed 's/^/    /'
  rm -f "$err"
}
echo "model $MODEL ($(du -h "$MODEL" | cut -f1)), frontier $F, decode probe $GEN; CSV: frontier,prefill_tokens,prefill_tps,decode_tokens,decode_tps,kv_bytes,resident_bytes"
run "resident (f16 KV)" -ctk f16 -ctv f16
for c in $CACHES; do run "stream $c, page cache warm" --ssd-streaming --ssd-streaming-cache-experts "$c" --ssd-streaming-cold; done
mid=$(echo $CACHES | awk '{print $2}')
for c in ${COLD:-$mid}; do drop; run "stream $c, page cache cold" --ssd-streaming --ssd-streaming-cache-experts "$c" --ssd-streaming-cold; done
c=$mid
run "stream $c, warm start (hotlist)" --ssd-streaming --ssd-streaming-cache-experts "$c"
run "stream, $CAP cap, default cache" --ssd-streaming --vk-memory-limit "$CAP" --ssd-streaming-cold
drop; run "stream, $CAP cap, page cache cold" --ssd-streaming --vk-memory-limit "$CAP" --ssd-streaming-cold
run "resident, $CAP cap" -ctk f16 -ctv f16 --vk-memory-limit "$CAP"
