#!/usr/bin/env bash
# Builds the C++ core and extension into build/<name> (default "dev") and lays
# out an importable package there, so several working builds can coexist.
# Usage: eval "$(scripts/dev_build.sh [name])"   # sets PYTHONPATH
# LUCID_CMAKE_ARGS adds CMake arguments (scripts/sanitize.sh passes its flags so).
set -euo pipefail
cd "$(dirname "$0")/.."
name="${1:-dev}"
out="build/$name"
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)  # shared across builds
read -r -a extra <<<"${LUCID_CMAKE_ARGS:-}"
cmake -S . -B "$out" -G Ninja -DLUCID_BUILD_PYTHON=ON -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" "${extra[@]}" >/dev/null
ninja -C "$out" >&2
site="$out/site/lucid"
rm -rf "$out/site"
mkdir -p "$site"
for f in python/lucid/*; do
  case "$f" in *.so|*.dylib) continue ;; esac
  ln -s "$(realpath "$f")" "$site/"
done
for lib in "$out"/_C*.so "$out"/liblucid_core.*; do
  [ -e "$lib" ] && ln -s "$(realpath "$lib")" "$site/"
done
echo "export PYTHONPATH=$(realpath "$out/site")"
