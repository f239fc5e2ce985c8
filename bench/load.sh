#!/bin/sh
# Sustained load (issue 8 item 4), the full-size version of the `load` test suite:
#   1. EXECS `capsa exec IMAGE true` in waves of WAVE concurrent (default 1,000 in waves
#      of 32), back to back: throughput, p50/p99/max start-to-exit latency of one
#      `capsa exec` (set-up, the command, tear-down), peak RSS of one capsa process;
#   2. READERS containers reading every file of one SIF at once: wall time, and whether
#      all read the same bytes;
#   3. PULLS concurrent pulls into one empty cache (PULLS/2 of one image, the rest spread
#      over two others), from a private test registry: wall time, SIFs in the cache, every
#      blob verified against its digest (the `load` test counts downloads per blob);
#   then leaks: mounts left under the session directory, loop devices on the image, FUSE
#   servers and capsa processes still alive, descriptors of a long-running container
#   beyond 0-2, and the cache's consistency.
# Prints a Markdown table and, with --write-doc, puts it in docs/reliability.md between
# the `load-figures` markers. Run it as root for the loop-device path and as an
# unprivileged user (e.g. `setpriv --reuid=capsa-test ...`) for the FUSE path.
#
# Usage: bench/load.sh [--write-doc] [EXECS [WAVE [READERS [PULLS]]]]
#   IMAGE=path.sif   the image (default: the vendored busybox SIF fixture)
#   CAPSA=path       the binary (default: build/src/cli/capsa)
#   REGISTRY=host:port  a running plain test registry for the pulls (default: start a
#                    private one with tests/test_registries/start.sh, as root, on ports 5124-5127
#                    or those in CAPSA_TEST_REGISTRY_{PLAIN,TOKEN,AUTH,BASIC}_PORT)
# Smoke run: bench/load.sh 64 16 8 6
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
write_doc=0
if [ "${1:-}" = "--write-doc" ]; then write_doc=1; shift; fi
execs=${1:-1000}
wave=${2:-32}
readers=${3:-32}
pulls=${4:-16}
capsa=${CAPSA:-$root/build/src/cli/capsa}
image_src=${IMAGE:-$root/tests/fixtures/upstream/sif/real/busybox_amd64.sif}
work=$(mktemp -d "${TMPDIR:-/var/tmp}/capsa-bench-load.XXXXXX")
state="$work/registry"
. "$root/bench/lib.sh"
started_registry=0
cleanup() {
  [ "$started_registry" -eq 0 ] || registry_stop "$state"
  rm -rf "$work"
}
trap cleanup EXIT

# A private copy: loop devices and FUSE servers on it are this run's alone.
cp "$image_src" "$work/load.sif"
mkdir -p "$work/session" "$work/shared"

registry=${REGISTRY:-}
if [ -z "$registry" ] && [ "$pulls" -gt 0 ]; then
  if [ "$(id -u)" -eq 0 ]; then
    started_registry=1
    registry_start "$state" 5124
    registry="$plain"
  else
    echo "bench/load.sh: no REGISTRY given and not root: skipping the pulls" >&2
    pulls=0
  fi
fi

CAPSA="$capsa" WORK="$work" EXECS="$execs" WAVE="$wave" READERS="$readers" PULLS="$pulls" REGISTRY="$registry" \
  WRITE_DOC="$write_doc" DOC="$root/docs/reliability.md" COMMAND="bench/load.sh $execs $wave $readers $pulls" \
  python3 - <<'EOF'
import hashlib, os, re, resource, statistics, subprocess, sys, time

capsa, work = os.environ["CAPSA"], os.environ["WORK"]
execs, wave = int(os.environ["EXECS"]), int(os.environ["WAVE"])
readers, pulls = int(os.environ["READERS"]), int(os.environ["PULLS"])
registry = os.environ["REGISTRY"]
image, session, shared = f"{work}/load.sif", f"{work}/session", f"{work}/shared"
marker = f"CAPSA_BENCH_LOAD={work}"
env = dict(os.environ, CAPSA_SESSION_DIR=session, CAPSA_BENCH_LOAD=work)
devnull = subprocess.DEVNULL

def spawn(argv, **kw):
    return subprocess.Popen(argv, env=kw.pop("env", env), stdin=devnull, stdout=kw.pop("stdout", devnull),
                            stderr=subprocess.PIPE, **kw)

def reap(proc):
    """Waits with wait4: exit status and the peak RSS (KiB) of that process alone."""
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode, usage.ru_maxrss

def percentile(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]

# --- 1. execs in waves ---
latencies, rss, failures = [], [], 0
t0 = time.monotonic()
for start in range(0, execs, wave):
    batch = {}
    for _ in range(min(wave, execs - start)):
        began = time.monotonic()
        proc = spawn([capsa, "exec", image, "true"])
        batch[proc.pid] = (began, proc)
    while batch:
        # In the order they end: a container that ends early is not charged with the
        # time of slower ones started before it.
        pid, status, usage = os.wait4(-1, 0)
        if pid not in batch:
            continue
        began, proc = batch.pop(pid)
        latencies.append(time.monotonic() - began)
        proc.returncode = code = os.waitstatus_to_exitcode(status)
        rss.append(usage.ru_maxrss)
        if code != 0:
            failures += 1
            if failures == 1:
                print("first failure:", proc.stderr.read().decode(errors="replace"), file=sys.stderr)
        proc.stderr.close()
exec_wall = time.monotonic() - t0

# --- 2. many readers of one SIF ---
read_all = ["sh", "-c", "find / -xdev -type f 2>/dev/null | sort | xargs cat | md5sum"]
t0 = time.monotonic()
procs = [spawn([capsa, "exec", image] + read_all, stdout=subprocess.PIPE) for _ in range(readers)]
sums, read_failures = set(), 0
for proc in procs:
    out = proc.stdout.read()
    code, _ = reap(proc)
    read_failures += code != 0
    sums.add(out)
read_wall = time.monotonic() - t0

# --- 3. concurrent pulls into one cache ---
pull_wall, pull_failures, sif_count = 0.0, 0, 0
if pulls > 0:
    cache = f"{work}/cache"
    images = ["public/busybox:1.0"] * (pulls // 2)
    others = ["public/layers:latest", "public/zstd:latest"]
    images += [others[i % 2] for i in range(pulls - len(images))]
    penv = dict(env, CAPSA_CACHEDIR=cache)
    t0 = time.monotonic()
    procs = [spawn([capsa, "pull", "-q", "--nohttps", f"{work}/pull{i}.sif", f"docker://{registry}/{ref}"], env=penv)
             for i, ref in enumerate(images)]
    for proc in procs:
        code, _ = reap(proc)
        if code != 0:
            pull_failures += 1
            print("pull failed:", proc.stderr.read().decode(errors="replace"), file=sys.stderr)
    pull_wall = time.monotonic() - t0
    sif_count = len([n for n in os.listdir(f"{cache}/sif") if n.endswith(".sif")])
    for name in os.listdir(f"{cache}/blobs/sha256"):
        path = f"{cache}/blobs/sha256/{name}"
        if re.fullmatch(r"[0-9a-f]{64}", name):
            with open(path, "rb") as f:
                if hashlib.sha256(f.read()).hexdigest() != name:
                    pull_failures += 1
                    print("corrupt cache entry", name, file=sys.stderr)

# --- leaks ---
def leftovers():
    found = []
    namespaces = set()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            ns = os.readlink(f"/proc/{pid}/ns/mnt")
            if ns not in namespaces:
                namespaces.add(ns)
                for line in open(f"/proc/{pid}/mountinfo"):
                    point = line.split()[4]
                    if point == session or point.startswith(session + "/"):
                        found.append(f"mount {point} (pid {pid})")
            if image.encode() in open(f"/proc/{pid}/cmdline", "rb").read():
                found.append(f"process {pid}")
            elif marker.encode() in open(f"/proc/{pid}/environ", "rb").read() and int(pid) != os.getpid():
                found.append(f"process {pid}")
        except OSError:
            pass
    for loop in os.listdir("/sys/block"):
        try:
            if open(f"/sys/block/{loop}/loop/backing_file").read().strip() == os.path.realpath(image):
                found.append(f"loop device /dev/{loop}")
        except OSError:
            pass
    return found

deadline = time.monotonic() + 30
while leftovers() and time.monotonic() < deadline:
    time.sleep(0.1)
leaks = leftovers()
long_running = spawn([capsa, "exec", "-B", f"{shared}:/w", image, "sh", "-c", "touch /w/ready; exec sleep 60"])
while not os.path.exists(f"{shared}/ready") and long_running.poll() is None:
    time.sleep(0.01)
extra_fds = [f"{fd} -> {os.readlink(f'/proc/{long_running.pid}/fd/{fd}')}"
             for fd in os.listdir(f"/proc/{long_running.pid}/fd") if fd not in ("0", "1", "2")]
long_running.kill()
reap(long_running)

fuse = "squashfuse_ll" if os.environ.get("CAPSA_FUSE") == "squashfuse" else "capsa's FUSE server"
who = "root (kernel squashfs, loop device)" if os.geteuid() == 0 else f"unprivileged ({fuse}, user namespace)"
ms = lambda s: f"{s * 1000:.0f} ms"
rows = [
    ("who", who),
    (f"{execs} × `capsa exec IMAGE true`, waves of {wave}", f"{execs - failures} succeeded, {failures} failed"),
    ("throughput", f"{execs / exec_wall:.1f} containers/s ({exec_wall:.1f} s in all)"),
    ("start-to-exit latency p50 / p99 / max", f"{ms(percentile(latencies, 50))} / {ms(percentile(latencies, 99))} / {ms(max(latencies))}"),
    ("peak RSS of one capsa process (max / median)", f"{max(rss) / 1024:.1f} MiB / {statistics.median(rss) / 1024:.1f} MiB"),
    (f"{readers} containers reading every file of one SIF", f"{read_wall:.1f} s, {readers - read_failures} succeeded, {len(sums)} distinct checksum(s)"),
]
if pulls > 0:
    rows.append((f"{pulls} concurrent pulls into one cache (3 images)",
                 f"{pull_wall:.1f} s, {pulls - pull_failures} succeeded, {sif_count} SIF(s) in the cache, entries verified"))
rows.append(("left behind (mounts, loop devices, processes)", ", ".join(leaks) or "nothing"))
rows.append(("descriptors of a running container beyond 0-2", ", ".join(extra_fds) or "none"))
kernel = os.uname().release
cpus = os.cpu_count()
table = "| measure | result |\n|---|---|\n" + "".join(f"| {k} | {v} |\n" for k, v in rows)
block = (f"`{os.environ['COMMAND']}` as {'root' if os.geteuid() == 0 else 'an unprivileged user'}, "
         f"Linux {kernel}, {cpus} CPUs, {time.strftime('%Y-%m-%d')}:\n\n" + table)
print(block)
if os.environ["WRITE_DOC"] == "1":
    doc = os.environ["DOC"]
    text = open(doc).read()
    tag = "root" if os.geteuid() == 0 else "user"
    begin, end = f"<!-- load-figures-{tag} -->", f"<!-- /load-figures-{tag} -->"
    if begin in text and end in text:
        text = text[:text.index(begin) + len(begin)] + "\n" + block + text[text.index(end):]
        open(doc, "w").write(text)
        print(f"updated {doc}")
    else:
        print(f"{doc} has no {begin} markers", file=sys.stderr)
sys.exit(1 if failures or read_failures or pull_failures or leaks or extra_fds or len(sums) != 1 else 0)
EOF
