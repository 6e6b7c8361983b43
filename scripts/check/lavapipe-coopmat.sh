#!/usr/bin/env bash
# Runs a node script under Mesa 26's lavapipe, whose cooperative matrices (8 × 8 × 8 f16 → f32 at
# its default 8-lane subgroups) let a machine without a GPU check the matrix-unit kernels' logic
# (mmc-check --fragment 8; test/coopmat-lavapipe.test.ts). Debian 12's Mesa 22.3 and
# bookworm-backports' 25.0 have none. Nothing is installed system-wide: Debian 13's
# mesa-vulkan-drivers from trixie-backports and the libraries it needs (Debian 13's glibc among
# them) are downloaded with a private apt state and unpacked into .tools/mesa-trixie, and node runs
# through that glibc's own loader with a Vulkan driver list naming only that lavapipe. For checks
# only: the engine never takes this lavapipe's matrix units (its modules need 16 × 16 × 16 at 32
# lanes), and lavapipe crashed compiling any cooperative-matrix module at other subgroup sizes
# (LP_NATIVE_VECTOR_WIDTH 512, 1024, 2048: seen with Mesa 26.2.6).
#
#   bash scripts/check/lavapipe-coopmat.sh --fetch          (download only; setup.sh runs this)
#   bash scripts/check/lavapipe-coopmat.sh [SCRIPT ARGS…]   (default: dist/scripts/check/mmc-check.js --fragment 8)
set -euo pipefail
cd "$(dirname "$0")/../.."
root=.tools/mesa-trixie/root
if [ ! -e "$root/usr/lib/x86_64-linux-gnu/libvulkan_lvp.so" ]; then
  [ "$(uname -m)" = x86_64 ] && command -v apt-get >/dev/null && command -v dpkg >/dev/null || { echo "lavapipe-coopmat: needs x86_64 with apt-get and dpkg" >&2; exit 2; }
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  mkdir -p "$work/lists/partial" "$work/debs" "$root"
  printf "deb http://deb.debian.org/debian trixie main\ndeb http://deb.debian.org/debian trixie-backports main\n" > "$work/sources.list"
  apt=(-oDir::Etc::SourceList="$work/sources.list" -oDir::Etc::SourceParts=/dev/null -oDir::State::Lists="$work/lists" -oDebug::NoLocking=1 -oAPT::Default-Release=trixie-backports)
  apt-get "${apt[@]}" update -qq >/dev/null 2>&1 || { echo "lavapipe-coopmat: apt-get update of Debian 13 (trixie, trixie-backports) failed" >&2; exit 2; }
  # the driver, the Vulkan loader and everything they need, recursively (glibc included)
  pkgs=$(apt-cache "${apt[@]}" depends --recurse --no-recommends --no-suggests --no-conflicts --no-breaks --no-replaces --no-enhances mesa-vulkan-drivers libvulkan1 | grep -v '^ ' | grep -v '<' | sort -u)
  (cd "$work/debs" && apt-get "${apt[@]}" download $pkgs >/dev/null 2>&1) || { echo "lavapipe-coopmat: downloading Debian 13's Mesa failed" >&2; exit 2; }
  for f in "$work/debs"/*.deb; do dpkg -x "$f" "$root"; done
fi
[ "${1:-}" = --fetch ] && exit 0
lib="$PWD/$root/usr/lib/x86_64-linux-gnu"
icd="$PWD/.tools/mesa-trixie/lvp_icd.json"
printf '{ "file_format_version": "1.0.1", "ICD": { "library_path": "%s/libvulkan_lvp.so", "api_version": "1.4.0" } }\n' "$lib" > "$icd"
[ $# -gt 0 ] || set -- dist/scripts/check/mmc-check.js --fragment 8
VK_DRIVER_FILES="$icd" VK_ICD_FILENAMES="$icd" exec "$lib/ld-linux-x86-64.so.2" --library-path "$lib" "$(command -v node)" "$@"
