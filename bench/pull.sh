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

/usr/bin/python3 "$root/bench/report_runs.py" "$work/results" "registry -> squashfs, image '$image', cold cache, page cache dropped" rss size
