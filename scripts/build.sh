#!/bin/sh
# Builds capsa. Re-running only rebuilds what changed.
#   build.sh        capsa and capsa-full, Release, into build/release, with the shell
#                   completion and man pages generated from them: what installing and
#                   running need, nothing more (setup.sh)
#   build.sh all    every test suite with capsa and capsa-full (RelWithDebInfo, so a failing
#                   test has a useful backtrace) into build/, their portable variants for the
#                   release tarball (linked from the same objects, with a static libcurl built
#                   once by build-static-curl.sh), and the libFuzzer targets into
#                   build/fuzz (clang, ASan+UBSan) (test.sh, benchmarks)
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
if [ "$what" = run ]; then
  # shellcheck disable=SC2086
  cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=Release -DCAPSA_BUILD_TESTS=OFF $launcher >/dev/null
  # The Slurm plugin is installed with the rest when Slurm's headers were found
  # (src/spank): build it too, or `cmake --install` finds nothing to copy.
  spank=""
  if cmake --build build/release --target help | grep -q "capsa_spank"; then spank="capsa_spank capsa-spank-task"; fi
  # shellcheck disable=SC2086
  cmake --build build/release -j "$jobs" --target capsa capsa-full capsa-completion-and-man $spank
  exit 0
fi
static_curl=$("$root/scripts/build-static-curl.sh")
# shellcheck disable=SC2086
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCAPSA_FUZZ_BINARY_DIR="$root/build/fuzz" \
  -DCAPSA_PORTABLE_CURL="$static_curl" $launcher >/dev/null
cmake --build build -j "$jobs"
# shellcheck disable=SC2086
cmake -S . -B build/fuzz -G Ninja -DCAPSA_FUZZ=ON -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo $launcher >/dev/null
cmake --build build/fuzz -j "$jobs"
