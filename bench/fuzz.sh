#!/bin/sh
# Runs every libFuzzer target for SECONDS (default 300) each, seeded with the fixtures,
# and reports executions, executions per second, coverage (edges) and corpus size.
# Usage: bench/fuzz.sh [SECONDS]    (build first: scripts/build.sh)
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
seconds=${1:-300}
fuzzdir="$root/build/fuzz/tests/fuzz"
corpus_root="$root/build/fuzz-corpus"
seeds_for() {
  case "$1" in
    sif) echo "$root/../shared/fixtures/sif/images $root/../shared/fixtures/sif/real" ;;
    *) echo "" ;;
  esac
}
printf '%-12s %12s %10s %8s %8s\n' target executions exec/s edges corpus
for bin in "$fuzzdir"/fuzz_*; do
  name=${bin##*/fuzz_}
  mkdir -p "$corpus_root/$name"
  log=$(mktemp)
  # shellcheck disable=SC2046
  "$bin" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 \
    "$corpus_root/$name" $(seeds_for "$name") >"$log" 2>&1 || { echo "$name: FAILED (see $log)"; continue; }
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
  edges=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
  corpus=$(find "$corpus_root/$name" -type f | wc -l)
  printf '%-12s %12s %10s %8s %8s\n' "$name" "$execs" "$rate" "$edges" "$corpus"
  rm -f "$log"
done
