#!/bin/sh
# Persistent overlays, not a test: unpack a conda-like tree (FILES small files, 0.2-16 KiB,
# in package directories as conda lays them out) into an ext3 overlay image from inside a
# container, then read every file back in a fresh container, three ways:
#   host    a plain directory on the host's file system, no container (the baseline)
#   root    root: `capsa exec --overlay IMG`: loop device + the kernel's ext3 + overlayfs
#   user    the unprivileged user: the same command: capsa's ext3 FUSE server under the
#           kernel's overlayfs (in the user namespace), requests through /dev/fuse
#   userring the same through FUSE over io_uring, where the kernel has it (Linux 6.14+:
#           the script turns /sys/module/fuse/parameters/enable_uring on for this mode
#           only and puts it back afterwards; skipped with URING=0)
#   user2fs the same with CAPSA_EXT3_FUSE=fuse2fs: Debian's fuse2fs + fuse-overlayfs, the
#           way before capsa had its own server (skipped with FUSE2FS=0)
# The same static busybox (tar, find, cat) does the work each time. A write counts until
# the data is on disk: the container has ended, its overlay is released (flock on the
# image, which the FUSE server holds until it has written everything back) and `sync`
# returned.
# Reads start cold (page cache dropped). Prints seconds (median of RUNS) and the ratio
# to the host directory; the target for the unprivileged overlay is writes within 3x of
# root's kernel ext3.
# Needs root (drop_caches, loop devices) and the unprivileged test user.
#   bench/overlay.sh [FILES] [RUNS]       defaults: 20000 3
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
capsa=${CAPSA:-$root/build/src/cli/capsa}
files=${1:-20000}
runs=${2:-3}
modes="root user"
uring_switch=/sys/module/fuse/parameters/enable_uring
if [ "${URING:-1}" != 0 ] && [ -w "$uring_switch" ]; then
  modes="$modes userring"
  uring_before=$(cat "$uring_switch")
fi
# Run on exit by bench_workdir's handler (bench/lib.sh).
bench_cleanup() { [ -z "${uring_before:-}" ] || echo "$uring_before" > "$uring_switch"; }
[ "${FUSE2FS:-1}" = 0 ] || modes="$modes user2fs"
user=${CAPSA_TEST_USER:-capsa-test}
sif=$root/tests/fixtures/upstream/sif/real/busybox_amd64.sif

. "$root/bench/lib.sh"
bench_preflight overlay.sh "drop_caches, loop devices"

bench_workdir overlay
cp "$sif" "$work/busybox.sif"
chmod 644 "$work/busybox.sif"
mkdir "$work/user"  # where the unprivileged user's image lives
chown "$user" "$work/user"

echo "making a conda-like tree of $files files ..." >&2
python3 - "$work/tree" "$files" <<'PY'
import os, random, sys
root, count = sys.argv[1], int(sys.argv[2])
random.seed(1)
made = 0
package = 0
while made < count:
    package += 1
    base = os.path.join(root, "pkgs", f"pkg{package}-1.{package % 7}.0", "lib", "python3.11", "site-packages",
                        f"pkg{package}")
    for sub in range(random.randint(1, 6)):
        d = os.path.join(base, f"sub{sub}", "__pycache__" if sub % 3 == 2 else "")
        os.makedirs(d, exist_ok=True)
        for i in range(random.randint(5, 40)):
            if made == count:
                break
            size = int(random.lognormvariate(7.5, 0.9)) % 16384 + 200
            with open(os.path.join(d, f"m{i}.py"), "w") as f:
                f.write(("# module %d\n" % i) + "x = 1\n" * (size // 6))
            made += 1
PY
tar -C "$work/tree" -cf "$work/conda.tar" .
chmod 644 "$work/conda.tar"
echo "tree: $files files, $(($(stat -c %s "$work/conda.tar") / 1048576)) MiB as tar; $(nproc) CPUs; median of $runs" >&2

drop() { sync; echo 3 > /proc/sys/vm/drop_caches; }
now() { date +%s.%N; }
as_user() { "$root/tests/support/as-test-user" "$@"; }
unpack='mkdir -p /opt/conda && busybox tar -xf '"$work"'/conda.tar -C /opt/conda'
readback='busybox find /opt/conda -type f | busybox xargs busybox cat | busybox wc -c'

for run in $(seq "$runs"); do
  # host: a plain directory
  rm -rf "$work/host"; mkdir "$work/host"; drop
  t0=$(now); busybox tar -xf "$work/conda.tar" -C "$work/host"; sync; t1=$(now)
  echo "$t0 $t1" | awk '{print $2 - $1}' >> "$work/write-host"
  drop
  t0=$(now); bytes=$(cd "$work/host" && busybox find . -type f | busybox xargs busybox cat | busybox wc -c); t1=$(now)
  echo "$t0 $t1" | awk '{print $2 - $1}' >> "$work/read-host"
  for who in $modes; do
    img=$work/$who.img
    [ "$who" = root ] || img=$work/user/$who.img
    rm -f "$img"
    case $who in
      root) as="env" ;;
      user | userring) as="as_user env CAPSA_EXT3_FUSE=builtin" ;;
      user2fs) as="as_user env CAPSA_EXT3_FUSE=fuse2fs" ;;
    esac
    # Only the userring mode may use io_uring, whatever the switch was before.
    if [ "$who" = userring ]; then echo Y > "$uring_switch"; elif [ -n "${uring_before:-}" ]; then echo N > "$uring_switch"; fi
    $as "$capsa" overlay create --sparse --size 1024 "$img"
    drop
    t0=$(now)
    $as "$capsa" exec --overlay "$img" "$work/busybox.sif" sh -c "$unpack"
    flock "$img" true; sync
    t1=$(now)
    echo "$t0 $t1" | awk '{print $2 - $1}' >> "$work/write-$who"
    drop
    t0=$(now)
    got=$($as "$capsa" exec --overlay "$img:ro" "$work/busybox.sif" sh -c "$readback")
    t1=$(now)
    [ "$got" = "$bytes" ] || { echo "bench/overlay.sh: $who read $got bytes back, the host $bytes" >&2; exit 1; }
    echo "$t0 $t1" | awk '{print $2 - $1}' >> "$work/read-$who"
  done
done

median() { sort -n "$1" | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
wh=$(median "$work/write-host"); rh=$(median "$work/read-host")
wr=$(median "$work/write-root"); rr=$(median "$work/read-root")
printf '%-7s %-42s %9s %8s %9s %8s\n' mode "how" "write s" "x host" "read s" "x host"
for who in host $modes; do
  w=$(median "$work/write-$who"); r=$(median "$work/read-$who")
  case $who in
    host) how="plain directory, no container" ;;
    root) how="root: loop + kernel ext3 + overlayfs" ;;
    user) how="user: capsa ext3 FUSE + kernel overlayfs" ;;
    userring) how="user: the same, FUSE over io_uring" ;;
    user2fs) how="user: fuse2fs + fuse-overlayfs" ;;
  esac
  awk -v m="$who" -v h="$how" -v w="$w" -v r="$r" -v wh="$wh" -v rh="$rh" \
    'BEGIN { printf "%-7s %-42s %9.2f %8.2f %9.2f %8.2f\n", m, h, w, w / wh, r, r / rh }'
done
wu=$(median "$work/write-user"); ru=$(median "$work/read-user")
awk -v wu="$wu" -v wr="$wr" -v ru="$ru" -v rr="$rr" \
  'BEGIN { printf "unprivileged / root: writes %.2fx, reads %.2fx (target: writes <= 3x)\n", wu / wr, ru / rr }'
if [ -s "$work/write-userring" ]; then
  wi=$(median "$work/write-userring"); ri=$(median "$work/read-userring")
  awk -v wu="$wi" -v wr="$wr" -v ru="$ri" -v rr="$rr" \
    'BEGIN { printf "FUSE over io_uring / root: writes %.2fx, reads %.2fx\n", wu / wr, ru / rr }'
fi
if [ -s "$work/write-user2fs" ]; then
  wf=$(median "$work/write-user2fs"); rf=$(median "$work/read-user2fs")
  awk -v wu="$wf" -v wr="$wr" -v ru="$rf" -v rr="$rr" \
    'BEGIN { printf "fuse2fs + fuse-overlayfs / root: writes %.2fx, reads %.2fx\n", wu / wr, ru / rr }'
fi
