#!/bin/sh
# Workflow bursts, not a test: TASKS short tasks in a row on one image (what Snakemake,
# Nextflow or cwltool do with thousands of jobs), each `exec IMAGE /bin/true`, as root and
# as the unprivileged test user. Compared: the native /bin/true; capsa as it runs by
# default (back-to-back containers join the image kept mounted: runtime/kept_image.hpp);
# capsa with CAPSA_KEEP_IMAGE_SECONDS=0, which mounts the image for each task as
# Apptainer does; Charliecloud's ch-run on the same squashfs (squashfuse for each task).
# hyperfine runs each command without a shell; the figure is the mean ms per task and
# its overhead over the native /bin/true of the same user. Target: capsa's overhead per
# task <= 3 ms, root and unprivileged.
#   bench/burst.sh [IMAGE.sif] [TASKS]     defaults: busybox fixture, 1000
# Run it on a quiet machine (or under `nice -n -20`): a build beside it is measured too.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
capsa=${CAPSA:-$root/build/src/cli/capsa}
image=${1:-}
[ -n "$image" ] || image="$root/tests/fixtures/upstream/sif/real/busybox_amd64.sif"
tasks=${2:-1000}
user=${CAPSA_TEST_USER:-capsa-test}

. "$root/bench/lib.sh"
bench_preflight burst.sh "the unprivileged runs are started from root"
command -v hyperfine >/dev/null || { echo "bench/burst.sh: needs hyperfine" >&2; exit 1; }
bench_cleanup() {  # ends the kept images (cache clean), in a cache of the run's own
  CAPSA_CACHEDIR="$work/cache" "$capsa" cache clean --force >/dev/null 2>&1 || true
  "$root/tests/support/as-test-user" env CAPSA_CACHEDIR="$work/user/cache" "$capsa" cache clean --force >/dev/null 2>&1 || true
}
bench_workdir burst
cp "$image" "$work/image.sif"
id=$("$capsa" sif list "$work/image.sif" | awk -F"|" '/Squashfs/ { gsub(/ /, "", $1); print $1; exit }')
"$capsa" sif dump "${id:-1}" "$work/image.sif" > "$work/image.sqfs"
chmod -R a+rX "$work"
mkdir "$work/user" && chown "$user" "$work/user"
cd "$work"

# Each row runs capsa itself, not through env(1), whose own exec would count as capsa's
# (0.6 ms on a VM where /bin/true takes 0.7): the linger time is set in hyperfine's
# environment instead. The mount-per-task rows come first, as root a kept image would
# hold the loop device and page cache their mounts then share; the kept-image rows run
# with CAPSA_KEEP_IMAGE_SECONDS unset, so the site's linger applies.
CAPSA_KEEP_IMAGE_SECONDS=0 hyperfine -N --warmup 5 --runs "$tasks" --export-json root.json --style none \
  -n "native /bin/true (root)" /bin/true \
  -n "capsa, mount per task (root)" "$capsa exec image.sif /bin/true" \
  > /dev/null 2> hyperfine-root.log || { cat hyperfine-root.log >&2; exit 1; }
env -u CAPSA_KEEP_IMAGE_SECONDS hyperfine -N --warmup 5 --runs "$tasks" --export-json kept.json --style none \
  -n "capsa, kept image (root)" "$capsa exec image.sif /bin/true" \
  > /dev/null 2> hyperfine-kept.log || { cat hyperfine-kept.log >&2; exit 1; }
"$root/tests/support/as-test-user" sh -c "CAPSA_KEEP_IMAGE_SECONDS=0 hyperfine -N --warmup 5 --runs $tasks \
  --export-json $work/user/user.json --style none \
  -n 'native /bin/true (user)' /bin/true \
  -n 'capsa, mount per task (user)' '$capsa exec $work/image.sif /bin/true' \
  > /dev/null 2> $work/user/hyperfine.log" || { cat "$work/user/hyperfine.log" >&2; exit 1; }
"$root/tests/support/as-test-user" sh -c "env -u CAPSA_KEEP_IMAGE_SECONDS hyperfine -N --warmup 5 --runs $tasks \
  --export-json $work/user/kept.json --style none \
  -n 'capsa, kept image (user)' '$capsa exec $work/image.sif /bin/true' \
  $(command -v ch-run >/dev/null && echo "-n 'ch-run (user, squashfuse)' 'ch-run $work/image.sqfs -- /bin/true'") \
  > /dev/null 2> $work/user/hyperfine-kept.log" || { cat "$work/user/hyperfine-kept.log" >&2; exit 1; }

echo "$(nproc) CPUs, $tasks tasks in a row each, image $(basename "$image")"
/usr/bin/python3 - "$work" <<'PY'
import json, os, sys
work = sys.argv[1]
rows = []
for path in ("root.json", "kept.json", "user/user.json", "user/kept.json"):
    rows += json.load(open(os.path.join(work, path)))["results"]
native = {("root" if "(root)" in r["command"] else "user"): r["mean"] for r in rows if r["command"].startswith("native")}
print("%-32s %12s %14s %8s" % ("command", "ms per task", "- native ms", "CPU ms"))
for r in rows:
    who = "root" if "(root)" in r["command"] else "user"
    print("%-32s %12.2f %14.2f %8.2f" % (r["command"], r["mean"] * 1e3, (r["mean"] - native[who]) * 1e3,
                                         (r["user"] + r["system"]) * 1e3))
PY
