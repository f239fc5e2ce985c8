#!/bin/sh
# Building an image whose %post installs a few Debian packages, side by side (issue 7 item 7):
#   capsa build as root (real root),
#   capsa build --fakeroot as root (a user namespace; emulated root unless root has subuid ranges),
#   capsa build as the unprivileged test user capsa-test (fakeroot with its subuid/subgid ranges),
#   Charliecloud: ch-image build --force of the equivalent Dockerfile (its unprivileged-build
#     workarounds for Debian: fakeroot(1) injected into RUN),
#     then ch-convert -o squash, so that every tool ends with one squashfs image.
# For each: wall time, CPU time (user+sys), peak RSS, peak extra disk used while it ran
# (sampled from the file system holding every cache and temporary), and the output size.
# The base image comes from a local test registry (cold: a fresh cache per run); the
# packages come from the Debian mirror the image's sources name. Run as root.
#
# Usage: bench/build.sh [PACKAGES...]   default: "curl less vim-tiny python3-minimal"
#        Smoke run: bench/build.sh hello
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
packages=${*:-curl less vim-tiny python3-minimal}
capsa=${CAPSA:-$root/build/src/cli/capsa}  # CAPSA=path: another build, e.g. to compare before and after
work=$(mktemp -d /var/tmp/capsa-bench-build.XXXXXX)
chmod 0755 "$work"
state="$work/registry"
. "$root/bench/lib.sh"
cleanup() {
  registry_stop "$state"
  # The unprivileged build's files may belong to capsa-test's subordinate ids.
  rm -rf "$work"
}
trap cleanup EXIT

[ "$(id -u)" -eq 0 ] || { echo "bench/build.sh: run as root" >&2; exit 1; }
registry_start "$state" 5130

cat > "$work/recipe.def" <<DEF
Bootstrap: docker
From: $plain/public/debian:bookworm

%post
    apt-get update -q
    apt-get install -y -q --no-install-recommends $packages
    rm -rf /var/lib/apt/lists/*
DEF
mkdir -p "$work/ch-context"
cat > "$work/ch-context/Dockerfile" <<DOCKER
FROM $tls/public/debian:bookworm
RUN apt-get update -q && apt-get install -y -q --no-install-recommends $packages && rm -rf /var/lib/apt/lists/*
DOCKER
chmod -R a+rX "$work"

capsa_env() { echo "CAPSA_CACHEDIR='$work/$1-cache' TMPDIR='$work/$1-tmp' APPTAINER_NOHTTPS=1"; }
mkdir -p "$work/root-tmp" "$work/fakeroot-tmp" "$work/user-tmp" "$work/user-cache" "$work/user-out"
chown capsa-test "$work/user-tmp" "$work/user-cache" "$work/user-out" 2>/dev/null || true

run capsa-root "$work/root.sif" sh -c "$(capsa_env root) '$capsa' build -q '$work/root.sif' '$work/recipe.def'"
run capsa-fakeroot "$work/fakeroot.sif" sh -c "$(capsa_env fakeroot) '$capsa' build -q --fakeroot '$work/fakeroot.sif' '$work/recipe.def'"
if id capsa-test >/dev/null 2>&1; then
  run capsa-user "$work/user-out/user.sif" runuser -u capsa-test -- sh -c \
    "cd /tmp && $(capsa_env user) '$capsa' build -q '$work/user-out/user.sif' '$work/recipe.def'" || true
fi
charliecloud="cd '$work/ch-context' && USER=root REQUESTS_CA_BUNDLE='$state/ca.pem' CH_IMAGE_STORAGE='$work/ch-storage' \
  /usr/bin/python3 /usr/bin/ch-image --tls-no-verify build --force -t bench-build -f Dockerfile . &&
  USER=root CH_IMAGE_STORAGE='$work/ch-storage' ch-convert -i ch-image -o squash bench-build '$work/charliecloud.sqfs'"
run charliecloud "$work/charliecloud.sqfs" sh -c "$charliecloud" || true

/usr/bin/python3 - "$work/results" "$packages" <<'PY'
import sys
rows = [l.split() for l in open(sys.argv[1])]
r = {n: dict(wall=float(w), cpu=float(u) + float(s), rss=int(k) / 1024, disk=int(p) / 2**20, size=int(z) / 2**20)
     for n, w, u, s, k, p, z in rows}
print(f"debian:bookworm + apt-get install {sys.argv[2]} -> squashfs image; cold caches, page cache dropped")
print(f"{'tool':16} {'wall s':>8} {'cpu s':>8} {'peak RSS MiB':>13} {'peak disk MiB':>14} {'output MiB':>11}")
for n, v in r.items():
    print(f"{n:16} {v['wall']:8.1f} {v['cpu']:8.1f} {v['rss']:13.0f} {v['disk']:14.0f} {v['size']:11.1f}")
c = r.get("capsa-root")
for n, v in r.items():
    if c is None or n == "capsa-root": continue
    print(f"{n}/capsa-root: wall {v['wall'] / c['wall']:.2f}x, peak disk {v['disk'] / max(c['disk'], 1):.2f}x")
PY
