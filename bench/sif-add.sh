#!/bin/sh
# Wrapping a squashfs partition into a SIF: capsa vs siftool (the reference tool that
# Apptainer embeds), on the same SIZE_MB partition, in one run; prints both times and
# the ratio. Usage: bench/sif-add.sh [SIZE_MB] (default 2048). Needs hyperfine.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
capsa=${CAPSA:-$root/build/src/cli/capsa}  # CAPSA=path: another build, e.g. to compare before and after
size=${1:-2048}
work=$(mktemp -d "${TMPDIR:-/var/tmp}/capsa-bench-XXXXXX")
trap 'rm -rf "$work"' EXIT
head -c "$((size * 1024 * 1024))" /dev/urandom > "$work/part.squashfs"
cd "$work"
hyperfine --warmup 1 --runs 10 --export-json "$work/result.json" \
  --prepare "rm -f capsa.sif siftool.sif; sync" \
  -n capsa "$capsa sif new capsa.sif && $capsa sif add --datatype 4 --partfs 1 --parttype 2 --partarch 2 --groupid 1 capsa.sif part.squashfs" \
  -n siftool "siftool new siftool.sif && siftool add --datatype 4 --partfs 1 --parttype 2 --partarch 2 --groupid 1 siftool.sif part.squashfs"
/usr/bin/python3 - "$work/result.json" "$size" <<'PY'
import json, sys
r = {x["command"]: x["mean"] for x in json.load(open(sys.argv[1]))["results"]}
print(f"{sys.argv[2]} MiB partition: capsa {r['capsa']:.3f} s, siftool {r['siftool']:.3f} s, "
      f"siftool/capsa = {r['siftool'] / r['capsa']:.2f}x")
PY
