#!/bin/sh
# A `docker save` tar -> one squashfs image (issue 15), side by side:
#   capsa build X.sif docker-archive:FILE (default zstd), the same with --compression gzip,
#   the Apptainer pipeline for it: skopeo copy docker-archive: -> oci: + umoci unpack +
#   mksquashfs -comp gzip (what Apptainer 1.4 runs, through its libraries, for the source).
# The archive is made once by skopeo from the test registry. Columns and ratios as
# bench/pull.sh: wall, CPU, peak RSS, peak extra disk, output size. Run as root.
#
# Usage: bench/archive.sh [IMAGE]   IMAGE: a test image name (default: debian).
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
image=${1:-debian}
capsa=${CAPSA:-$root/build/src/cli/capsa}
work=$(mktemp -d /var/tmp/capsa-bench-archive.XXXXXX)
state="$work/registry"
. "$root/bench/lib.sh"
cleanup() { registry_stop "$state"; rm -rf "$work"; }
trap cleanup EXIT

[ "$(id -u)" -eq 0 ] || { echo "bench/archive.sh: run as root (umoci unpack and drop_caches need it)" >&2; exit 1; }
[ "$image" != large ] || export CAPSA_LARGE_FIXTURES=1
registry_start "$state" 5124
archive="$work/image.tar"
skopeo copy -q --src-tls-verify=false "docker://$plain/public/$image:latest" "docker-archive:$archive:$image:latest"

capsa_build="CAPSA_CACHEDIR='$work/capsa-cache' '$capsa' build -q '$work/capsa.sif' 'docker-archive:$archive'"
capsa_gzip="CAPSA_CACHEDIR='$work/capsa-gzip-cache' '$capsa' build -q --compression gzip '$work/capsa-gzip.sif' 'docker-archive:$archive'"
apptainer="skopeo copy -q 'docker-archive:$archive' 'oci:$work/oci:latest' &&
  umoci --log error unpack --image '$work/oci:latest' '$work/bundle' &&
  mksquashfs '$work/bundle/rootfs' '$work/apptainer.sqfs' -noappend -comp gzip -quiet"

run capsa "$work/capsa.sif" sh -c "$capsa_build"
run capsa-gzip "$work/capsa-gzip.sif" sh -c "$capsa_gzip"
run apptainer "$work/apptainer.sqfs" sh -c "$apptainer"

/usr/bin/python3 - "$work/results" "$image" "$(stat -c %s "$archive")" <<'PY'
import sys
rows = [l.split() for l in open(sys.argv[1])]
r = {n: dict(wall=float(w), cpu=float(u) + float(s), rss=int(k) / 1024, disk=int(p) / 2**20, size=int(z) / 2**20)
     for n, w, u, s, k, p, z in rows}
print(f"docker-archive -> squashfs, image '{sys.argv[2]}' ({int(sys.argv[3]) / 2**20:.0f} MiB tar), page cache dropped")
print(f"{'tool':14} {'wall s':>8} {'cpu s':>8} {'peak RSS MiB':>13} {'peak disk MiB':>14} {'output MiB':>11}")
for n, v in r.items():
    print(f"{n:14} {v['wall']:8.1f} {v['cpu']:8.1f} {v['rss']:13.0f} {v['disk']:14.0f} {v['size']:11.0f}")
c = r["capsa"]
for n, v in r.items():
    if n == "capsa": continue
    print(f"{n}/capsa: wall {v['wall'] / c['wall']:.2f}x, cpu {v['cpu'] / c['cpu']:.2f}x, "
          f"peak disk {v['disk'] / max(c['disk'], 1):.2f}x, output size {v['size'] / c['size']:.2f}x")
g, a = r["capsa-gzip"], r["apptainer"]
print(f"apptainer/capsa-gzip: wall {a['wall'] / g['wall']:.2f}x, output size {g['size'] / a['size']:.2f}x of apptainer's")
PY
