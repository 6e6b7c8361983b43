# Sourced by the device-machine scripts (scripts/bench/prefill-gpu.sh, scripts/experiments/attn/run-gpu.sh):
# say prints a line and appends it to $LOG; run prints its command, runs it with its output
# printed and appended, then its seconds. $1: the log's name; its header names the commit, the time
# and the GPU.
LOG=${OUT:-/tmp}/$1.txt
say() { echo "$*" | tee -a "$LOG"; }
run() { say "## $*"; local t=$SECONDS; "$@" 2>&1 | tee -a "$LOG"; say "# ($((SECONDS - t)) s)"; }
say "# $1 $(git rev-parse --short HEAD 2>/dev/null || echo '?'); $(date -u +%FT%TZ); $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null)"
