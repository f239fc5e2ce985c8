#!/bin/sh
# Start-up latency, not a test: `exec IMAGE /bin/true` with capsa as root and as the
# unprivileged test user (both FUSE servers), against the native /bin/true, Charliecloud's
# ch-run on the same squashfs (it mounts it with squashfuse on every start) and crun on an
# equivalent bundle (the image unpacked), as root and rootless. hyperfine runs each
# command without a shell; the table shows mean, p50 and p99 in ms and the difference of
# the mean to the native /bin/true of the same user. Then BURST containers started at
# once (the wall time until all have finished; median of RUNS).
# capsa's own FUSE server is the default and runs without a wrapper; the squashfuse_ll
# rows go through `env CAPSA_FUSE=squashfuse`, which adds an exec (about 1 ms).
# CPU ms is user + system time of the command and the children it waits for (hyperfine's
# figures): it leaves out capsa's FUSE server (a child nobody waits for; ch-run's
# squashfuse runs inside ch-run and is counted), and it is the figure to compare on a
# busy machine, where wall times mostly measure the scheduler.
# Each image runs twice: as given (the default, Singularity 3.8.1's busybox, is gzip) and
# as capsa writes the same tree (zstd: `capsa build`), since most of a cold start of a
# gzip image is the kernel or FUSE server inflating the binary's blocks.
# As root, capsa serves a gzip image that no other container uses through its FUSE server
# (src/runtime/lone_start.hpp), so its one-at-a-time gzip row may sit below the floor (a
# kernel mount); its 32-at-once row shares the kernel's mount as before.
# Targets: capsa as root within 10 ms of native; capsa unprivileged no slower than ch-run.
# The main rows mount the image at every start (CAPSA_KEEP_IMAGE_SECONDS=0), as ch-run and
# crun do; the "kept image" rows are capsa's default for back-to-back starts of one image
# (runtime/kept_image.hpp), and bench/burst.sh measures those in a long row. At the end,
# the breakdown of a start into phases (bench/phases.c, bench/strace_phases.py).
# Needs root, hyperfine, the unprivileged test user; ch-run and crun are optional.
#   bench/start.sh [IMAGE.sif] [RUNS] [BURST]     defaults: busybox fixture, 30, 64
#   full size:     bench/start.sh "" 300 64
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
capsa=${CAPSA:-$root/build/src/cli/capsa}  # CAPSA=path: another build, e.g. to compare before and after
image=${1:-}
[ -n "$image" ] || image="$root/tests/fixtures/upstream/sif/real/busybox_amd64.sif"
runs=${2:-30}
burst=${3:-64}
user=${CAPSA_TEST_USER:-capsa-test}

[ "$(id -u)" -eq 0 ] || { echo "bench/start.sh: run as root" >&2; exit 1; }
[ -x "$capsa" ] || { echo "bench/start.sh: build capsa first ($capsa)" >&2; exit 1; }
command -v hyperfine >/dev/null || { echo "bench/start.sh: needs hyperfine" >&2; exit 1; }
id -u "$user" >/dev/null 2>&1 || { echo "bench/start.sh: test user $user missing (run scripts/create-test-user.sh as root)" >&2; exit 1; }

. "$root/bench/lib.sh"
bench_cleanup() { umount -q "$work/floor" 2>/dev/null || true; }
bench_workdir start

as_user() {
  env -u CAPSA_FUSE "$root/tests/support/as-test-user" "$@"
}

# The same bytes for everyone: the SIF for capsa, its squashfs partition for ch-run,
# that partition unpacked for crun.
cp "$image" "$work/image.sif"
# The kept-image rows use a copy of their own: as root, a start that mounts the image
# finds a loop device already mapping its file and mounts that, and the kernel hands it
# the same superblock, decompressed pages and all, while a kept image of the same file
# lingers; the rows that mount at every start would then measure warm caches.
cp "$image" "$work/kept.sif"
"$capsa" build --force "$work/zstd.sif" "$work/image.sif" > /dev/null
for name in image zstd; do
  id=$("$capsa" sif list "$work/$name.sif" | awk -F"|" "/Squashfs/ { gsub(/ /, \"\", \$1); print \$1; exit }")
  "$capsa" sif dump "${id:-1}" "$work/$name.sif" > "$work/$name.sqfs"
done
mkdir -p "$work/bundle"
unsquashfs -q -n -d "$work/bundle/rootfs" "$work/image.sqfs" >/dev/null 2>&1 || true
[ -e "$work/bundle/rootfs/bin/true" ] || [ -L "$work/bundle/rootfs/bin/true" ] ||
  { echo "bench/start.sh: the image has no /bin/true" >&2; exit 1; }
chmod -R a+rX "$work"
mkdir "$work/user" && chown "$user" "$work/user"  # what the user's runs write
cd "$work"

have_crun=0
if command -v crun >/dev/null; then
  have_crun=1
  # crun 1.8.1 refuses a hybrid cgroup v1/v2 host; its runs go through a private mount
  # namespace without /sys/fs/cgroup/unified (test-infrastructure notes). Same cost to
  # every run, so the wrapper is set up once around hyperfine, not around each run.
  (cd bundle && crun spec --rootless && mv config.json rootless.json && crun spec)
  for spec in bundle/config.json bundle/rootless.json; do
    /usr/bin/python3 - "$spec" <<'PY'
import json, sys
path = sys.argv[1]
spec = json.load(open(path))
spec["process"]["args"] = ["/bin/true"]
spec["process"]["terminal"] = False
spec["root"]["readonly"] = True
json.dump(spec, open(path, "w"))
PY
  done
  mkdir -p crun-root crun-user bundle-user
  cp -a bundle/rootfs bundle-user/ 2>/dev/null || true
  mv bundle/rootless.json bundle-user/config.json
  chown -R "$user" crun-user
  chmod -R a+rX bundle bundle-user
fi

# hyperfine as root, then as the test user; each exports JSON.
# The floor for any runtime that mounts the image on each start: /bin/true from a kernel
# squashfs mounted just before (the mount itself not timed), no runtime at all.
mkdir -p floor
hyperfine -N --warmup 2 --runs "$runs" --export-json floor.json --style none \
  --prepare "sh -c 'umount -q $work/floor 2>/dev/null; mount -o loop,ro $work/image.sqfs $work/floor'" \
  -n "floor: fresh mount (root)" "chroot $work/floor /bin/true" \
  --prepare "sh -c 'umount -q $work/floor 2>/dev/null; mount -o loop,ro $work/zstd.sqfs $work/floor'" \
  -n "floor: fresh mount (root, zstd)" "chroot $work/floor /bin/true" > /dev/null 2> hyperfine-floor.log ||
  { cat hyperfine-floor.log >&2; exit 1; }
umount -q "$work/floor" 2>/dev/null || true
# Every start mounts the image, as ch-run's and crun's do: no kept image (see below).
export CAPSA_KEEP_IMAGE_SECONDS=0
# The commands compared with each other run in ROUNDS rounds, each command a share of
# the runs per round, so that a machine whose speed drifts (a shared VM) is seen by all
# of them alike; the summary pools the rounds.
rounds=5
per_round=$(( (runs + rounds - 1) / rounds ))
round=1
while [ $round -le $rounds ]; do
  hyperfine -N --warmup 3 --runs "$per_round" --export-json root.$round.json --style none \
    -n "native /bin/true (root)" /bin/true \
    -n "capsa (root)" "$capsa exec image.sif /bin/true" \
    -n "capsa (root, zstd)" "$capsa exec zstd.sif /bin/true" > /dev/null 2> hyperfine-root.log ||
    { cat hyperfine-root.log >&2; exit 1; }
  as_user sh -c "hyperfine -N --warmup 3 --runs $per_round --export-json $work/user/user.$round.json --style none \
    -n 'native /bin/true (user)' /bin/true \
    -n 'capsa (user, builtin)' '$capsa exec image.sif /bin/true' \
    -n 'capsa (user, squashfuse)' 'env CAPSA_FUSE=squashfuse $capsa exec image.sif /bin/true' \
    -n 'capsa (user, builtin, zstd)' '$capsa exec zstd.sif /bin/true' \
    $(command -v ch-run >/dev/null && echo "-n 'ch-run (user, squashfuse)' 'ch-run $work/image.sqfs -- /bin/true'") \
    $(command -v ch-run >/dev/null && echo "-n 'ch-run (user, squashfuse, zstd)' 'ch-run $work/zstd.sqfs -- /bin/true'") \
    > /dev/null 2> $work/user/hyperfine.log" || { cat "$work/user/hyperfine.log" >&2; exit 1; }
  # The kept image (runtime/kept_image.hpp): back-to-back starts join the first one's
  # mount, as capsa does by default (the rows above mount the image at every start).
  env -u CAPSA_KEEP_IMAGE_SECONDS hyperfine -N --warmup 3 --runs "$per_round" --export-json kept.$round.json \
    --style none -n "capsa (root, kept image)" "$capsa exec kept.sif /bin/true" > /dev/null 2> hyperfine-kept.log ||
    { cat hyperfine-kept.log >&2; exit 1; }
  as_user sh -c "env -u CAPSA_KEEP_IMAGE_SECONDS hyperfine -N --warmup 3 --runs $per_round \
    --export-json $work/user/kept.$round.json --style none \
    -n 'capsa (user, kept image)' '$capsa exec kept.sif /bin/true' > /dev/null 2> $work/user/hyperfine-kept.log" ||
    { cat "$work/user/hyperfine-kept.log" >&2; exit 1; }
  round=$((round + 1))
done
if [ $have_crun -eq 1 ]; then
  unshare -m --propagation private sh -c "
    umount /sys/fs/cgroup/unified 2>/dev/null || true
    hyperfine -N --warmup 5 --runs $runs --export-json $work/crun-root.json --style none \
      -n 'crun (root)' 'crun --root $work/crun-root run --bundle $work/bundle bench-root' > /dev/null 2> $work/crun.log
    $root/tests/support/as-test-user \
      hyperfine -N --warmup 5 --runs $runs --export-json $work/user/crun-user.json --style none \
      -n 'crun (user, rootless)' 'crun --root $work/crun-user run --bundle $work/bundle-user bench-user' > /dev/null 2> $work/user/crun.log
  " || { cat "$work/crun.log" "$work/user/crun.log" >&2; echo "crun failed; left out" >&2; }
fi

# BURST containers at once, as root and as the user: wall ms until the last has finished,
# median of 5 bursts.
cat > burst.sh <<'SH'
#!/bin/sh
# burst.sh COUNT COMMAND...: prints the median wall ms of 5 bursts of COUNT at once.
count=$1; shift
out=$(mktemp)
i=0
while [ $i -lt 5 ]; do
  start=$(date +%s%N); j=0
  while [ $j -lt "$count" ]; do "$@" >/dev/null 2>&1 & j=$((j + 1)); done
  wait
  echo $((($(date +%s%N) - start) / 1000000)) >> "$out"; i=$((i + 1))
done
sort -n "$out" | sed -n 3p
rm -f "$out"
SH
chmod 755 burst.sh
burst_native=$(./burst.sh "$burst" /bin/true)
burst_root=$(./burst.sh "$burst" "$capsa" exec image.sif /bin/true)
burst_user=$(as_user ./burst.sh "$burst" "$capsa" exec image.sif /bin/true)
burst_root_zstd=$(./burst.sh "$burst" "$capsa" exec zstd.sif /bin/true)
burst_user_zstd=$(as_user ./burst.sh "$burst" "$capsa" exec zstd.sif /bin/true)
burst_chrun=""
command -v ch-run >/dev/null && burst_chrun=$(as_user ./burst.sh "$burst" ch-run "$work/image.sqfs" -- /bin/true)

echo "$(nproc) CPUs, $((per_round * rounds)) runs each in $rounds rounds (3 warm-up runs per round), image $(basename "$image")"
/usr/bin/python3 - "$work" <<'PY'
import glob, json, os, sys
work = sys.argv[1]
pooled = {}  # command -> the results of every round, pooled
for pattern in ("root.*.json", "kept.*.json", "floor.json", "user/user.*.json", "user/kept.*.json", "crun-root.json",
                "user/crun-user.json"):
    for path in sorted(glob.glob(os.path.join(work, pattern))):
        for r in json.load(open(path))["results"]:
            p = pooled.setdefault(r["command"], {"command": r["command"], "times": [], "user": 0.0, "system": 0.0})
            n = len(r["times"])
            p["user"] += r["user"] * n
            p["system"] += r["system"] * n
            p["times"] += r["times"]
rows = []
for p in pooled.values():
    n = len(p["times"])
    rows.append({"command": p["command"], "times": p["times"], "mean": sum(p["times"]) / n,
                 "user": p["user"] / n, "system": p["system"] / n})
def pct(times, p):
    s = sorted(times)
    return s[min(len(s) - 1, int(round(p / 100 * (len(s) - 1))))]
native = {}
for r in rows:
    if r["command"].startswith("native"):
        native["root" if "(root)" in r["command"] else "user"] = r["mean"]
print("%-28s %9s %9s %9s %12s %8s" % ("command", "mean ms", "p50 ms", "p99 ms", "- native ms", "CPU ms"))
for r in rows:
    who = "root" if "(root)" in r["command"] else "user"
    t = r["times"]
    print("%-28s %9.2f %9.2f %9.2f %12.2f %8.2f" % (r["command"], r["mean"] * 1e3, pct(t, 50) * 1e3, pct(t, 99) * 1e3,
                                                  (r["mean"] - native.get(who, 0)) * 1e3,
                                                  (r["user"] + r["system"]) * 1e3))
by = {r["command"]: r["mean"] for r in rows}
for suffix, label in (("", "as given"), (", zstd", "zstd")):
    cu, ch = by.get("capsa (user, builtin%s)" % suffix), by.get("ch-run (user, squashfuse%s)" % suffix)
    if cu and ch:
        print("capsa (user, builtin) / ch-run, image %s: %.2f (target <= 1)" % (label, cu / ch))
    cr, nr = by.get("capsa (root%s)" % suffix), native.get("root")
    if cr and nr:
        print("capsa (root) - native, image %s: %.2f ms (target <= 10)" % (label, (cr - nr) * 1e3))
ck, ch = by.get("capsa (user, kept image)"), by.get("ch-run (user, squashfuse)")
if ck and ch:
    print("capsa (user, kept image) / ch-run, image as given: %.2f" % (ck / ch))
ck, nr = by.get("capsa (root, kept image)"), native.get("root")
if ck and nr:
    print("capsa (root, kept image) - native, image as given: %.2f ms" % ((ck - nr) * 1e3))
PY
# Where a start's time goes. capsa's own marks (CAPSA_PHASE_FD, bench/phases.c), for a
# start that mounts the image (CAPSA_KEEP_IMAGE_SECONDS=0, as every start of hyperfine's
# rows above would without the kept image) and one that joins the kept image; then the
# same milestones for ch-run and capsa from strace (bench/strace_phases.py), whose
# shares compare, not its milliseconds (strace slows every system call).
gcc -O2 -o phases "$root/bench/phases.c"
phase_runs=$(( runs < 50 ? runs : 50 ))
echo "== phases: capsa (root), image mounted for the start"
CAPSA_KEEP_IMAGE_SECONDS=0 ./phases "$phase_runs" "$capsa" exec image.sif /bin/true
echo "== phases: capsa (root), kept image joined"
env -u CAPSA_KEEP_IMAGE_SECONDS ./phases "$phase_runs" "$capsa" exec kept.sif /bin/true
echo "== phases: capsa (user), image mounted for the start"
as_user env CAPSA_KEEP_IMAGE_SECONDS=0 ./phases "$phase_runs" "$capsa" exec image.sif /bin/true
echo "== phases: capsa (user), kept image joined"
as_user env -u CAPSA_KEEP_IMAGE_SECONDS ./phases "$phase_runs" "$capsa" exec kept.sif /bin/true
if command -v strace >/dev/null; then
  i=1
  while [ $i -le 10 ]; do
    as_user strace -f -ttt -o "$work/user/ch-run.$i.trace" ch-run "$work/image.sqfs" -- /bin/true 2>/dev/null || true
    as_user env CAPSA_KEEP_IMAGE_SECONDS=0 strace -f -ttt -o "$work/user/capsa.$i.trace" "$capsa" exec image.sif /bin/true
    i=$((i + 1))
  done
  if command -v ch-run >/dev/null; then
    echo "== strace: ch-run (user)"
    /usr/bin/python3 "$root/bench/strace_phases.py" "$work"/user/ch-run.*.trace
  fi
  echo "== strace: capsa (user), image mounted for the start"
  /usr/bin/python3 "$root/bench/strace_phases.py" "$work"/user/capsa.*.trace
fi
echo "$burst at once (median of 5, ms until all finished): native $burst_native, capsa root $burst_root, capsa user $burst_user${burst_chrun:+, ch-run $burst_chrun}; zstd: capsa root $burst_root_zstd, capsa user $burst_user_zstd"
