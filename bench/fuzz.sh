#!/bin/sh
# Runs libFuzzer targets for SECONDS (default 300) each, one after the other, seeded with
# tests/fuzz/corpus/NAME (and the SIF fixtures for sif), and reports per target:
# executions, executions per second, coverage (edges: libFuzzer's "cov", and features:
# "ft", edges refined by hit counts and value profiles), the corpus size, and whether it
# found a crash, leak or timeout (the reproducer is kept under build/fuzz-artifacts/NAME).
# Usage: bench/fuzz.sh [SECONDS [TARGET...]]    (build first: scripts/build.sh)
#   bench/fuzz.sh 600                 every target, 10 minutes each
#   bench/fuzz.sh 120 squashfs layer  two of them
# The corpus grows in build/fuzz-corpus/NAME across runs (the smoke tests use it too).
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
seconds=${1:-300}
[ $# -gt 0 ] && shift
fuzzdir="$root/build/fuzz/tests/fuzz"
corpus_root="$root/build/fuzz-corpus"
artifacts_root="$root/build/fuzz-artifacts"
seeds_for() {
  [ -d "$root/tests/fuzz/corpus/$1" ] && echo "$root/tests/fuzz/corpus/$1"
  case "$1" in
    sif) echo "$root/tests/fixtures/upstream/sif/images $root/tests/fixtures/upstream/sif/real" ;;
    fuse_server) echo "$root/tests/fuzz/corpus/squashfs $root/tests/fuzz/corpus/unpack" ;;
  esac
}
if [ $# -gt 0 ]; then
  targets="$*"
else
  targets=$(for bin in "$fuzzdir"/fuzz_*; do echo "${bin##*/fuzz_}"; done)
fi
printf '%-16s %12s %10s %8s %9s %8s  %s\n' target executions exec/s edges features corpus result
for name in $targets; do
  bin="$fuzzdir/fuzz_$name"
  [ -x "$bin" ] || { echo "$name: no such target ($bin)" >&2; exit 2; }
  mkdir -p "$corpus_root/$name" "$artifacts_root/$name"
  log=$(mktemp)
  result=ok
  # shellcheck disable=SC2046
  "$bin" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 \
    -artifact_prefix="$artifacts_root/$name/" "$corpus_root/$name" $(seeds_for "$name") >"$log" 2>&1 ||
    result="FOUND A BUG: $(grep -m1 -o 'ERROR: [A-Za-z]*: [a-z-]*\|ERROR: libFuzzer: [a-z-]*' "$log" || echo failed), log $log"
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | head -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | head -1)
  last=$(grep -E '^#[0-9]+.*cov: ' "$log" | tail -1)
  edges=$(echo "$last" | grep -o 'cov: [0-9]*' | cut -d' ' -f2)
  features=$(echo "$last" | grep -o 'ft: [0-9]*' | cut -d' ' -f2)
  corpus=$(find "$corpus_root/$name" -type f | wc -l)
  printf '%-16s %12s %10s %8s %9s %8s  %s\n' "$name" "${execs:-?}" "${rate:-?}" "${edges:-?}" "${features:-?}" \
    "$corpus" "$result"
  [ "$result" = ok ] && rm -f "$log"
done
