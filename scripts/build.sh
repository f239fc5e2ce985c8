#!/bin/sh
# Builds capsa into build/ (Release). Re-running only rebuilds what changed.
#   build.sh        capsa and capsa-full: what installing and running need (setup.sh)
#   build.sh all    also every test suite, and the libFuzzer targets into build/fuzz
#                   (clang, ASan+UBSan) (test.sh)
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
what=${1:-run}
case "$what" in
  run|all) ;;
  *) echo "build.sh: unknown target set '$what' (use run or all)" >&2; exit 2 ;;
esac
jobs=$(nproc)
# ccache, where installed, makes rebuilds in other checkouts of the tree cheap.
launcher=""
if command -v ccache >/dev/null 2>&1; then
  export CCACHE_BASEDIR="$root"
  launcher="-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache"
fi
tests=OFF
[ "$what" = all ] && tests=ON
# shellcheck disable=SC2086
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCAPSA_BUILD_TESTS=$tests \
  -DCAPSA_FUZZ_BINARY_DIR="$root/build/fuzz" $launcher >/dev/null
if [ "$what" = run ]; then
  cmake --build build -j "$jobs" --target capsa capsa-full
  exit 0
fi
cmake --build build -j "$jobs"
# shellcheck disable=SC2086
cmake -S . -B build/fuzz -G Ninja -DCAPSA_FUZZ=ON -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo $launcher >/dev/null
cmake --build build/fuzz -j "$jobs"
