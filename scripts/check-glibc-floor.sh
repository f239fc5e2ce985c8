#!/bin/sh
# Fails when a binary needs a glibc newer than the floor the release promises (2.28, RHEL 8).
#   scripts/check-glibc-floor.sh [--floor 2.28] BINARY...
# For every ELF file given, lists each dynamic symbol (objdump -T) whose GLIBC_ version is
# above the floor, one line per symbol: "BINARY: SYMBOL GLIBC_X.Y"; also refuses a binary
# that needs a shared library other than glibc's own, which the target system may lack.
set -eu
floor=2.28
if [ "${1:-}" = --floor ]; then
  floor="$2"
  shift 2
fi
[ $# -gt 0 ] || { echo "usage: check-glibc-floor.sh [--floor X.Y] BINARY..." >&2; exit 2; }
command -v objdump >/dev/null || { echo "check-glibc-floor.sh: objdump not found (apt-get install binutils)" >&2; exit 2; }
floor_minor=${floor#2.}
bad=0
for binary in "$@"; do
  [ -f "$binary" ] || { echo "check-glibc-floor.sh: $binary: no such file" >&2; exit 2; }
  table=$(objdump -T "$binary" 2>&1) || { echo "check-glibc-floor.sh: $binary: not an ELF file objdump reads" >&2; exit 2; }
  # Lines read: ADDRESS FLAGS SECTION SIZE [(]GLIBC_2.NN[)] NAME; the version may be hidden in
  # parentheses. Symbols the binary defines itself carry no GLIBC_ version.
  # GLIBC_PRIVATE and markers such as GLIBC_ABI_DT_RELR (2.36) are above any floor too.
  over=$(printf '%s\n' "$table" | awk -v floor="$floor_minor" -v file="$binary" '
    { for (i = 1; i <= NF; i++) {
        version = $i; gsub(/[()]/, "", version)
        if (version !~ /^GLIBC_/) continue
        if (version ~ /^GLIBC_2\.[0-9]+(\.[0-9]+)?$/) {
          split(version, part, ".")
          if (part[2] + 0 <= floor + 0) continue
        }
        print file ": " $NF " " version
      } }')
  markers=$(objdump -p "$binary" | awk -v file="$binary" '
    /^Version References/ { refs = 1; next }
    refs && /GLIBC_ABI_|GLIBC_PRIVATE/ { print file ": requires " $NF }')
  over=$(printf '%s\n%s' "$over" "$markers" | sed '/^$/d')
  if [ -n "$over" ]; then
    printf '%s\n' "$over"
    bad=1
  fi
  needed=$(objdump -p "$binary" | awk '/NEEDED/ {print $2}' |
    grep -Ev '^(libc\.so\.6|libm\.so\.6|libpthread\.so\.0|libdl\.so\.2|librt\.so\.1|ld-linux-x86-64\.so\.2)$' || true)
  for lib in $needed; do
    echo "$binary: needs $lib, which is not part of glibc (link it statically)"
    bad=1
  done
done
if [ "$bad" -ne 0 ]; then
  echo "check-glibc-floor.sh: the binaries above need more than glibc $floor" >&2
  exit 1
fi
