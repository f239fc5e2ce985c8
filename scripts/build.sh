#!/bin/sh
# Configures and builds capsa into build/ (Release with debug info), plus the libFuzzer
# targets into build/fuzz with clang. Re-running only rebuilds what changed.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
jobs=$(nproc)
# ccache, where installed, makes rebuilds in other checkouts of the tree cheap.
launcher=""
if command -v ccache >/dev/null 2>&1; then
  export CCACHE_BASEDIR="$root"
  launcher="-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache"
fi
cmake -S . -B build/fuzz -G Ninja -DCAPSA_FUZZ=ON -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo $launcher >/dev/null
cmake --build build/fuzz -j "$jobs"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCAPSA_FUZZ_BINARY_DIR="$root/build/fuzz" $launcher >/dev/null
cmake --build build -j "$jobs"
