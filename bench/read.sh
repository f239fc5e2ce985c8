#!/bin/sh
# File-read throughput inside a container, not a test: how fast a program in
# `capsa exec IMAGE` reads the image's files through each way capsa can mount it:
#   kernel      root: loop device + the kernel's squashfs
#   builtin     the unprivileged user: capsa's own FUSE server   (CAPSA_FUSE=builtin)
#   squashfuse  the unprivileged user: squashfuse_ll              (CAPSA_FUSE=squashfuse)
# Two workloads, both read by bench/readtree.c (static, inside the image):
#   small  FILES small files (0.5-32 KiB, 100 per directory) read by THREADS threads
#   large  one LARGE_MB file read sequentially by one thread
# and two cache states, each run in a fresh container:
#   cold   `echo 3 > /proc/sys/vm/drop_caches` before the run: disk + decompression + FS
#   warm   caches dropped, then the SIF read once on the host: decompression + FS, no disk
# Prints MB/s, files/s and the time ratio to the kernel (1.00 = as fast; the target for
# the unprivileged default is <= 1.5), the median of RUNS runs (the drivers take turns). File contents are
# base64 text, which zstd compresses to about 3/4 (real images: 1/2 to 1/3). COMP=gzip
# builds the image with gzip instead, mksquashfs's and Apptainer's default.
# Needs root (drop_caches, loop devices) and the unprivileged test user.
#   bench/read.sh [FILES] [LARGE_MB] [THREADS] [RUNS]       defaults: 2000 64 8 1 (smoke)
#   full size:    bench/read.sh 20000 2048 16 5
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
capsa=${CAPSA:-$root/build/src/cli/capsa}  # CAPSA=path: another build, e.g. to compare before and after
files=${1:-2000}
large_mb=${2:-64}
threads=${3:-8}
runs=${4:-1}
user=${CAPSA_TEST_USER:-capsa-test}
drivers=${CAPSA_BENCH_DRIVERS:-kernel builtin squashfuse}
comp=${COMP:-zstd}
case "$comp" in
  zstd|gzip) ;;
  *) echo "bench/read.sh: COMP must be zstd or gzip, not '$comp'" >&2; exit 2 ;;
esac

. "$root/bench/lib.sh"
bench_preflight read.sh "drop_caches, loop devices"
# Every run mounts the image afresh: a run within the linger of the one before would join
# its kept image (runtime/kept_image.hpp), and with it that server's block cache.
export CAPSA_KEEP_IMAGE_SECONDS=0

bench_workdir read

as_user() {
  "$root/tests/support/as-test-user" "$@"
}

echo "making the image: $files small files, one $large_mb MiB file ..." >&2
mkdir -p "$work/tree/data/small"
gcc -O2 -static -pthread -o "$work/tree/readtree" "$root/bench/readtree.c"
/usr/bin/python3 - "$work/tree/data/small" "$files" <<'PY'
import base64, math, os, random, sys
top, count = sys.argv[1], int(sys.argv[2])
rng = random.Random(1)
for i in range(count):
    d = os.path.join(top, "d%03d" % (i // 100))
    if i % 100 == 0:
        os.mkdir(d)
    size = int(math.exp(rng.uniform(math.log(512), math.log(32768))))
    data = base64.b64encode(os.urandom(size * 3 // 4 + 3))[:size]
    with open(os.path.join(d, "f%05d" % i), "wb") as f:
        f.write(data)
PY
head -c "$((large_mb * 786432))" /dev/urandom | base64 -w 0 > "$work/tree/data/large"
mksquashfs "$work/tree" "$work/part.sqfs" -comp "$comp" -b 131072 -noappend -quiet -no-progress -all-root -no-xattrs >/dev/null
rm -rf "$work/tree"
"$capsa" sif new "$work/bench.sif" >/dev/null
"$capsa" sif add --datatype 4 --partfs 1 --parttype 2 --partarch 2 --groupid 1 "$work/bench.sif" "$work/part.sqfs" >/dev/null
rm -f "$work/part.sqfs"
chmod 644 "$work/bench.sif"
echo "image: $(($(stat -c %s "$work/bench.sif") / 1048576)) MiB, $comp; $(nproc) CPUs; $threads threads; median of $runs" >&2

# One run: prints "BYTES FILES SECONDS" as measured inside the container.
run_once() {  # DRIVER CACHE ARGS...
  driver=$1 cache=$2; shift 2
  sync
  echo 3 > /proc/sys/vm/drop_caches
  [ "$cache" = warm ] && cat "$work/bench.sif" > /dev/null
  cd "$work"
  case $driver in
    kernel) "$capsa" exec bench.sif /readtree "$@" ;;
    *) as_user env CAPSA_FUSE="$driver" "$capsa" exec bench.sif /readtree "$@" ;;
  esac
}

# The drivers take turns, run by run, so that whatever else the machine does spreads
# over all of them alike.
measure_all() {  # CACHE
  cache=$1
  for driver in $drivers; do : > "$work/small-$driver"; : > "$work/large-$driver"; done
  i=0
  while [ $i -lt "$runs" ]; do
    for driver in $drivers; do
      run_once "$driver" "$cache" tree /data/small "$threads" >> "$work/small-$driver"
      run_once "$driver" "$cache" file /data/large >> "$work/large-$driver"
    done
    i=$((i + 1))
  done
}
median() {  # FILE of "BYTES FILES SECONDS" lines -> the median line by time
  sort -n -k3 "$1" | sed -n "$(((runs + 1) / 2))p"
}

printf '%-11s %-5s %10s %10s %8s   %10s %8s\n' driver cache "small MB/s" "files/s" "x kernel" "large MB/s" "x kernel"
for cache in cold warm; do
  measure_all "$cache"
  for driver in $drivers; do
    read -r sbytes sfiles ssec <<EOF
$(median "$work/small-$driver")
EOF
    read -r lbytes _ lsec <<EOF
$(median "$work/large-$driver")
EOF
    if [ "$driver" = kernel ]; then ksec=$ssec klsec=$lsec; fi
    awk -v d="$driver" -v c="$cache" -v sb="$sbytes" -v sf="$sfiles" -v ss="$ssec" -v lb="$lbytes" -v ls="$lsec" \
        -v ks="${ksec:-}" -v kl="${klsec:-}" 'BEGIN {
      sr = (ks == "") ? "-" : sprintf("%.2f", ss / ks); lr = (kl == "") ? "-" : sprintf("%.2f", ls / kl)
      printf "%-11s %-5s %10.1f %10.0f %8s   %10.1f %8s\n", d, c, sb / ss / 1e6, sf / ss, sr, lb / ls / 1e6, lr }'
  done
done

# Where a FUSE request's time goes: one more warm small-file run of capsa's server, which
# counts its requests and the time of their handlers (CAPSA_FUSE_STATS,
# squashfs/request_stats.hpp). What the handlers do not account for is the kernel's side:
# the request's trip through /dev/fuse, the wait for a free server thread, the copy of
# the reply into the page cache.
case " $drivers " in *" builtin "*)
  mkdir -p "$work/stats" && chown "$user" "$work/stats"
  sync
  echo 3 > /proc/sys/vm/drop_caches
  cat "$work/bench.sif" > /dev/null
  read -r sbytes sfiles ssec <<EOF2
$(cd "$work" && as_user env CAPSA_FUSE=builtin CAPSA_FUSE_STATS="$work/stats/counters" "$capsa" exec bench.sif /readtree tree /data/small "$threads")
EOF2
  /usr/bin/python3 - "$work/stats/counters" "$sfiles" "$ssec" "$threads" <<'PY'
import struct, sys
path, files, seconds, threads = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
# RequestKind's order (src/squashfs/request_stats.hpp); two uint64 each: count, ns.
kinds = ["LOOKUP", "GETATTR", "READLINK", "OPENDIR", "READDIR", "OPEN", "READ", "STATFS", "block read",
         "block decompress"]
data = open(path, "rb").read()
values = struct.unpack("<%dQ" % (2 * len(kinds)), data[:16 * len(kinds)])
print("FUSE requests of one warm small-file run (builtin, %d files, %.3f s, %d threads):" % (files, seconds, threads))
print("%-18s %9s %10s %9s %12s" % ("request", "count", "per file", "mean us", "total ms"))
handlers = 0
for i, name in enumerate(kinds):
    count, ns = values[2 * i], values[2 * i + 1]
    if count == 0:
        continue
    if not name.startswith("block"):
        handlers += ns
    print("%-18s %9d %10.2f %9.1f %12.1f" % (name, count, count / files, ns / count / 1e3, ns / 1e6))
print("handlers in all: %.1f ms of %.1f ms of wall time x %d threads; the rest is the kernel's side "
      "(transport, queueing, page cache)" % (handlers / 1e6, seconds * 1e3, threads))
PY
;; esac
