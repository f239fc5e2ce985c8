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

/usr/bin/python3 "$root/bench/report_runs.py" "$work/results" "docker-archive -> squashfs, image '$image' ($(( $(stat -c %s "$archive") / 1048576 )) MiB tar), page cache dropped" disk size
