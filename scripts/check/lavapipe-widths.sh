#!/usr/bin/env bash
# The Vulkan kernels at each lavapipe vector width (#47): LP_NATIVE_VECTOR_WIDTH=256 / 512 / 1024 / 2048
# makes lavapipe report 8 / 16 / 32 / 64-lane subgroups. It runs at most 16 (docs/vulkan.md), so the
# engine's subgroup probe refuses 1024 and 2048 (checked here: q36 --doctor must fail on
# "subgroups"), and the parity set runs at the widths lavapipe really executes.
# Usage: bash scripts/check/lavapipe-widths.sh [vitest files…] (default: the subgroup16 project's files;
# test/vulkan-batch.test.ts's bit-identity checks hold at 8 lanes only, docs/vulkan.md). Needs the build.
set -uo pipefail
cd "$(dirname "$0")/../.."
files=("$@")
# (default: the files vitest.config.ts lists for its subgroup16 project, read from vitest itself)
[ ${#files[@]} -gt 0 ] || mapfile -t files < <(npx vitest list --project subgroup16 --filesOnly | sed -n 's/^\[subgroup16\] //p')
[ ${#files[@]} -gt 0 ] || { echo "no test files: vitest list --project subgroup16 found none"; exit 2; }
status=0
for w in 256 512 1024 2048; do
  line=$(LP_NATIVE_VECTOR_WIDTH=$w node dist/ts/cli/q36.js --doctor | grep -E '^[a-z]+ +subgroups ')
  echo "width $w: $line"
  case "$w:$line" in
    256:ok*|512:ok*) LP_NATIVE_VECTOR_WIDTH=$w npx vitest run --project main "${files[@]}" || status=1 ;;
    1024:fail*|2048:fail*) ;;  # refused, as it must be
    *) echo "width $w: unexpected probe verdict"; status=1 ;;
  esac
done
exit $status
