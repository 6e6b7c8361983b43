#!/usr/bin/env bash
# Makes sure a glslc that compiles GL_KHR_cooperative_matrix is at hand for the matrix-core
# kernels (shaders whose .comp names that extension): the system's glslc where it can (Arch,
# Fedora, Ubuntu 24.04, Debian 13), else Debian 13's glslc unpacked into .tools/glslc (Debian 12's
# glslc 2023.2 cannot). Nothing is installed system-wide: the packages are downloaded with a private
# apt source list and run through their own dynamic loader (docs/toolchain.md says why).
# Prints the glslc command to use for those shaders, or nothing when none can be had (the build
# then leaves the matrix-core kernels out and says so).
set -uo pipefail
cd "$(dirname "$0")/../.."
probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
cat > "$probe/p.comp" <<'GLSL'
#version 450
#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
layout(local_size_x = 32) in;
layout(std430, binding = 0) buffer B { float v[]; };
void main() {
  coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseA> a = coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseA>(1.0);
  coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseB> b = coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseB>(1.0);
  coopmat<float, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator> c = coopmat<float, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator>(0.0);
  c = coopMatMulAdd(a, b, c);
  coopMatStore(c, v, 0, 16, gl_CooperativeMatrixLayoutRowMajor);
}
GLSL
works() { "$@" --target-env=vulkan1.2 -o "$probe/p.spv" "$probe/p.comp" >/dev/null 2>&1; }
if command -v glslc >/dev/null 2>&1 && works glslc; then echo glslc; exit 0; fi
tool=.tools/glslc/glslc
if [ -x "$tool" ] && works "$tool"; then echo "$tool"; exit 0; fi
[ "$(uname -m)" = x86_64 ] && command -v apt-get >/dev/null 2>&1 && command -v dpkg >/dev/null 2>&1 || exit 0
root=.tools/glslc/root
work=$(mktemp -d)
mkdir -p "$work/lists/partial" "$work/debs" "$root"
echo "deb http://deb.debian.org/debian trixie main" > "$work/sources.list"
apt=(-oDir::Etc::SourceList="$work/sources.list" -oDir::Etc::SourceParts=/dev/null -oDir::State::Lists="$work/lists" -oDebug::NoLocking=1)
if apt-get "${apt[@]}" update -qq >/dev/null 2>&1 &&
   (cd "$work/debs" && apt-get "${apt[@]}" download glslc libshaderc1 libc6 libstdc++6 libgcc-s1 >/dev/null 2>&1); then
  for f in "$work/debs"/*.deb; do dpkg -x "$f" "$root"; done
  cat > "$tool" <<'SH'
#!/bin/sh
# Debian 13's glslc through Debian 13's own loader and libraries (scripts/build/glslc-coopmat.sh)
r="$(dirname "$0")/root"
exec "$r/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2" --library-path "$r/usr/lib/x86_64-linux-gnu" "$r/usr/bin/glslc" "$@"
SH
  chmod +x "$tool"
fi
rm -rf "$work"
if [ -x "$tool" ] && works "$tool"; then echo "$tool"; fi
exit 0
