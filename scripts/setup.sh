#!/usr/bin/env bash
# One-command setup for a fresh Debian 12 + Node 20 machine: system packages (if missing),
# npm dependencies, and the build (WASM core, SPIR-V shaders, Vulkan addon, TypeScript).
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
command -v glslc >/dev/null 2>&1 || need+=(glslc)
dpkg -s libvulkan-dev >/dev/null 2>&1 || need+=(libvulkan-dev)
dpkg -s mesa-vulkan-drivers >/dev/null 2>&1 || need+=(mesa-vulkan-drivers)
command -v g++ >/dev/null 2>&1 || need+=(g++)
command -v make >/dev/null 2>&1 || need+=(make)
command -v python3 >/dev/null 2>&1 || need+=(python3)
# the chat page's test drives it in a headless browser (Debian's chromium, through puppeteer-core)
command -v chromium >/dev/null 2>&1 || need+=(chromium)
if [ ${#need[@]} -gt 0 ]; then
  echo "setup: installing Debian packages: ${need[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
fi

# the matrix-core kernels need a glslc newer than Debian 12's (a private copy in .tools/ if so)
bash scripts/build/glslc-coopmat.sh >/dev/null

# Mesa 26's lavapipe (cooperative matrices on the CPU) for the matrix-unit kernels' check, in
# .tools/mesa-trixie; without it that one test says what is missing
bash scripts/check/lavapipe-coopmat.sh --fetch || echo "setup: Mesa 26's lavapipe could not be fetched (test/coopmat-lavapipe.test.ts will fail)"

npm ci --no-audit --no-fund
npm run build
echo "setup: done. Run the tests with: npm test"
