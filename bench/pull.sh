#!/bin/sh
# Registry -> one squashfs image, cold, side by side (issue 3 item 10):
#   capsa pull (default zstd), capsa pull --compression gzip,
#   the Apptainer pipeline: skopeo copy + umoci unpack + mksquashfs -comp gzip,
#   Charliecloud: ch-image pull + ch-convert -o squash.
# For each: wall time, CPU time (user+sys), peak RSS, peak extra disk used while it ran
# (sampled from the file system, so every temporary counts), and the output size; then
# ratios against capsa. Page cache dropped before each run. Run as root on a quiet machine.
#
# Usage: bench/pull.sh [IMAGE]   IMAGE: a test image name (default: large, 1.25 GiB,
#        51k files, 7 layers; built with CAPSA_LARGE_FIXTURES=1, which this script sets for it).
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
image=${1:-large}
capsa=${CAPSA:-$root/build/src/cli/capsa}  # CAPSA=path: another build, e.g. to compare before and after
work=$(mktemp -d /var/tmp/capsa-bench-pull.XXXXXX)
state="$work/registry"
. "$root/bench/lib.sh"
cleanup() { registry_stop "$state"; rm -rf "$work"; }
trap cleanup EXIT

[ "$(id -u)" -eq 0 ] || { echo "bench/pull.sh: run as root (umoci unpack and drop_caches need it)" >&2; exit 1; }
[ "$image" != large ] || export CAPSA_LARGE_FIXTURES=1  # built only when it is the one measured
registry_start "$state" 5120
ref="$plain/public/$image:latest"

# Each pipeline is one shell command line, so that /usr/bin/time measures all of it.
capsa_pull="CAPSA_CACHEDIR='$work/capsa-cache' '$capsa' pull -q --nohttps '$work/capsa.sif' 'docker://$ref'"
capsa_gzip="CAPSA_CACHEDIR='$work/capsa-gzip-cache' '$capsa' pull -q --nohttps --compression gzip '$work/capsa-gzip.sif' 'docker://$ref'"
apptainer="skopeo copy -q --src-tls-verify=false 'docker://$ref' 'oci:$work/oci:latest' &&
  umoci --log error unpack --image '$work/oci:latest' '$work/bundle' &&
  mksquashfs '$work/bundle/rootfs' '$work/apptainer.sqfs' -noappend -comp gzip -quiet"
charliecloud="USER=root REQUESTS_CA_BUNDLE='$state/ca.pem' CH_IMAGE_STORAGE='$work/ch-storage' /usr/bin/python3 /usr/bin/ch-image --tls-no-verify pull \
    '127.0.0.1:$CAPSA_TEST_REGISTRY_TOKEN_PORT/public/$image:latest' bench-image &&
  USER=root CH_IMAGE_STORAGE='$work/ch-storage' ch-convert -i ch-image -o squash bench-image '$work/charliecloud.sqfs'"

run capsa "$work/capsa.sif" sh -c "$capsa_pull"
run capsa-gzip "$work/capsa-gzip.sif" sh -c "$capsa_gzip"
run apptainer "$work/apptainer.sqfs" sh -c "$apptainer"
run charliecloud "$work/charliecloud.sqfs" sh -c "$charliecloud" || true

/usr/bin/python3 - "$work/results" "$image" <<'PY'
import sys
rows = [l.split() for l in open(sys.argv[1])]
r = {n: dict(wall=float(w), cpu=float(u) + float(s), rss=int(k) / 1024, disk=int(p) / 2**20, size=int(z) / 2**20)
     for n, w, u, s, k, p, z in rows}
print(f"registry -> squashfs, image '{sys.argv[2]}', cold cache, page cache dropped")
print(f"{'tool':14} {'wall s':>8} {'cpu s':>8} {'peak RSS MiB':>13} {'peak disk MiB':>14} {'output MiB':>11}")
for n, v in r.items():
    print(f"{n:14} {v['wall']:8.1f} {v['cpu']:8.1f} {v['rss']:13.0f} {v['disk']:14.0f} {v['size']:11.0f}")
c = r["capsa"]
for n, v in r.items():
    if n == "capsa": continue
    print(f"{n}/capsa: wall {v['wall'] / c['wall']:.2f}x, cpu {v['cpu'] / c['cpu']:.2f}x, "
          f"rss {v['rss'] / c['rss']:.2f}x, output size {v['size'] / c['size']:.2f}x")
if "capsa-gzip" in r and "apptainer" in r:
    g = r["capsa-gzip"]; a = r["apptainer"]
    print(f"apptainer/capsa-gzip: wall {a['wall'] / g['wall']:.2f}x, output size {g['size'] / a['size']:.2f}x of apptainer's")
PY
