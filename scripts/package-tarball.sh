#!/bin/sh
# Packs the release tarball: capsa-VERSION-x86_64.tar.gz, unpacked and used anywhere by
# anyone (no root, no install step), on any x86_64 Linux with glibc 2.28 or newer.
#   scripts/package-tarball.sh [--no-build] [BUILD_DIR [OUT_DIR]]
#                                                     BUILD_DIR: build, OUT_DIR: BUILD_DIR
# BUILD_DIR is a build tree configured with CAPSA_PORTABLE_CURL (scripts/build.sh all does
# it); its portable binaries are linked here if they are not yet (no compiling), unless
# --no-build says the build is done (ctest's packing: no ninja beside the suites). Prints the
# tarball's path. Inside, under capsa-VERSION-x86_64/:
#   bin/capsa                      the portable runner; singularity, apptainer and
#                                  run-singularity link to it
#   libexec/capsa/capsa-full       every other command
#   etc/capsa/                     capsa.conf, nvliblist.conf, rocmliblist.conf,
#                                  network/ (the CNI bridge and ptp networks)
#   share/                         man pages, bash and zsh completion, modulefiles
# Every library but glibc is inside the binaries; scripts/check-glibc-floor.sh must pass.
set -eu
build_first=1
if [ "${1:-}" = --no-build ]; then
  build_first=0
  shift
fi
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
out="${2:-$build}"
grep -q '^CAPSA_PORTABLE_CURL:FILEPATH=.' "$build/CMakeCache.txt" 2>/dev/null ||
  { echo "package-tarball.sh: $build is not configured with CAPSA_PORTABLE_CURL (scripts/build.sh all)" >&2; exit 1; }
if [ "$build_first" -eq 1 ]; then
  cmake --build "$build" --target capsa capsa-full capsa-portable capsa-full-portable capsa-completion-and-man >/dev/null
fi
for binary in capsa capsa-full capsa-portable capsa-full-portable; do
  [ -x "$build/src/cli/$binary" ] || { echo "package-tarball.sh: $build/src/cli/$binary is not built" >&2; exit 1; }
done
version=$(sed -n 's/^CMAKE_PROJECT_VERSION:STATIC=//p' "$build/CMakeCache.txt")
name="capsa-$version-x86_64"
stage=$(mktemp -d "${TMPDIR:-/tmp}/capsa-tarball.XXXXXX")
trap 'rm -rf "$stage"' EXIT
tree="$stage/$name"
# The install rules lay out the tree (the relocatable layout of every install); the
# portable binaries then replace the ones linked against Debian's shared libraries.
cmake --install "$build" --prefix "$tree" >/dev/null
install -m 0755 "$build/src/cli/capsa-portable" "$tree/bin/capsa"
install -m 0755 "$build/src/cli/capsa-full-portable" "$tree/libexec/capsa/capsa-full"
strip "$tree/bin/capsa" "$tree/libexec/capsa/capsa-full"
# The Slurm plugin is built against the site's own Slurm (docs/slurm-plugin.md): it has no
# place in a tarball for any Linux.
find "$tree" \( -name libcapsa_spank.so -o -name capsa-spank-task \) -delete
find "$tree" -depth -type d -empty -delete
# Every ELF file shipped, not only the two binaries: nothing may escape the floor.
elf_files=$(find "$tree" -type f -exec sh -c 'head -c 4 "$1" | grep -q ELF' _ {} \; -print)
# shellcheck disable=SC2086  # one path per word (the tree's paths have no spaces)
"$root/scripts/check-glibc-floor.sh" $elf_files
mkdir -p "$out"
# Stable ownership and order, so that two packings of one build are the same archive.
tar -C "$stage" --owner=0 --group=0 --numeric-owner --sort=name -czf "$out/$name.tar.gz" "$name"
echo "$out/$name.tar.gz"
