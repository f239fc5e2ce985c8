#!/bin/sh
# MPI job start-up, side by side (issue 6 item 5): wall time for N ranks to start, run
# mpi_app (tests/mpi/mpi_app.c: MPI_Init, an Allreduce, an Allgather, MPI_Finalize) and
# exit, under the host's Open MPI mpirun, for N = 2, 4, 8 and 16 (oversubscribed on small
# machines):
#   bare     mpirun -np N mpi_app                         (the host binary)
#   capsa    mpirun -np N capsa exec mpi.sif mpi_app       (one container per rank)
#   ch-run   mpirun -np N ch-run rootfs.squashfs -- mpi_app (Charliecloud, same squashfs)
# The SIF is made with `capsa sif` from the very squashfs ch-run mounts, so both runtimes
# read the same bytes. Each point is the mean of RUNS runs (hyperfine, one warm-up);
# overhead per rank = (mean - bare mean) / N. Transport: shared memory (btl self,vader),
# with the single-copy mechanism off for every runner (ranks in separate user namespaces
# cannot use CMA; bare metal gets the same setting so that only the runtime differs).
# Run as root or as a user; as root the kernel mounts the image (capsa) and Open MPI's
# allow-run-as-root variables are set.
#
#   bench/mpi.sh [RUNS] [RANKS...]       default: 10 runs, ranks 2 4 8 16
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
runs=${1:-10}
[ $# -gt 0 ] && shift
ranks=${*:-2 4 8 16}
capsa=${CAPSA:-$root/build/src/cli/capsa}  # CAPSA=path: another build, e.g. to compare before and after
fixture=${CAPSA_MPI_FIXTURE:-/var/tmp/capsa-test-fixtures/mpi-image}
[ -x "$capsa" ] || { echo "bench/mpi.sh: build first (cmake --build build)" >&2; exit 1; }
[ -f "$fixture/rootfs.squashfs" ] || { echo "bench/mpi.sh: no $fixture: run tests/fixtures/build-all.sh (as root)" >&2; exit 1; }
for tool in mpirun hyperfine ch-run; do
  command -v "$tool" >/dev/null || { echo "bench/mpi.sh: $tool missing (scripts/install-deps.sh)" >&2; exit 1; }
done

work=$(mktemp -d "${TMPDIR:-/tmp}/capsa-bench-mpi.XXXXXX")
trap 'rm -rf "$work"' EXIT
sif="$work/mpi.sif"
"$root/tests/mpi/make-sif.sh" "$capsa" "$fixture" "$work" >/dev/null
squashfs="$fixture/rootfs.squashfs"
app="$fixture/mpi_app"
cd "$work"

export OMPI_MCA_btl_vader_single_copy_mechanism=none
export USER="${USER:-$(id -un)}"   # ch-run refuses to start without it
if [ "$(id -u)" -eq 0 ]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
mpirun_n() { echo "mpirun -np $1 --oversubscribe --bind-to none --mca btl self,vader"; }

echo "mpi_app start-up: $(nproc) CPUs, $(uname -r), $(mpirun --version | head -1), $(ch-run --version 2>&1 | head -1 | sed 's/^/ch-run /'), $runs runs each, as $(id -un)"
printf '%6s %12s %12s %12s %16s %16s\n' ranks "bare s" "capsa s" "ch-run s" "capsa +ms/rank" "ch-run +ms/rank"
for n in $ranks; do
  bare="$(mpirun_n "$n") $app --size $n --quiet"
  in_capsa="$(mpirun_n "$n") $capsa exec $sif /usr/local/bin/mpi_app --size $n --quiet"
  in_chrun="$(mpirun_n "$n") ch-run $squashfs -- /usr/local/bin/mpi_app --size $n --quiet"
  # Each must work before it is timed.
  for cmd in "$bare" "$in_capsa" "$in_chrun"; do
    sh -c "$cmd" > check.log 2>&1 || { echo "bench/mpi.sh: failed: $cmd" >&2; tail -20 check.log >&2; exit 1; }
  done
  hyperfine --style none --warmup 1 --runs "$runs" --export-csv "n$n.csv" \
    -n bare "$bare" -n capsa "$in_capsa" -n ch-run "$in_chrun" > /dev/null 2>&1
  /usr/bin/python3 - "n$n.csv" "$n" <<'PY'
import csv, sys
rows = {r["command"]: float(r["mean"]) for r in csv.DictReader(open(sys.argv[1]))}
n = int(sys.argv[2])
bare, capsa, chrun = rows["bare"], rows["capsa"], rows["ch-run"]
print(f"{n:6d} {bare:12.3f} {capsa:12.3f} {chrun:12.3f} {1000 * (capsa - bare) / n:16.1f} {1000 * (chrun - bare) / n:16.1f}")
PY
done
