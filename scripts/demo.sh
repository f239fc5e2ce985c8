#!/bin/sh
# The main job on a demo image the project makes itself: generate a root file system,
# pack it as squashfs, wrap it in a SIF with capsa, and show what capsa reads back.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
capsa=${CAPSA:-$root/build/src/cli/capsa}
work=${CAPSA_DEMO_DIR:-$root/build/demo}
rm -rf "$work"
mkdir -p "$work"

step() { printf '\n== %s\n' "$*"; }

step "root file system -> squashfs (gensquashfs, squashfs-tools-ng)"
"$root/scripts/make-demo-rootfs.sh" "$work/rootfs"
gensquashfs --pack-dir "$work/rootfs" --compressor gzip --quiet --force "$work/rootfs.squashfs"
ls -l "$work/rootfs.squashfs"

step "squashfs -> SIF (capsa sif new / add)"
sif="$work/demo.sif"
printf 'Bootstrap: scratch\n' > "$work/demo.def"
"$capsa" sif new "$sif"
"$capsa" sif add --datatype 1 --groupid 1 "$sif" "$work/demo.def"
"$capsa" sif add --datatype 4 --partfs 1 --parttype 2 --partarch 2 --groupid 1 "$sif" "$work/rootfs.squashfs"

step "capsa sif header $sif"
"$capsa" sif header "$sif"
step "capsa sif list $sif"
"$capsa" sif list "$sif"
step "capsa inspect --labels --runscript --environment $sif"
"$capsa" inspect --labels --runscript --environment "$sif"
step "capsa run $sif (the runscript, in a container)"
"$capsa" run "$sif" /bin/busybox uname -a
step "capsa exec --containall $sif (as $(id -un))"
"$capsa" exec --containall --pwd / "$sif" /bin/sh -c 'echo "inside: uid $(id -u), greeting: $DEMO_GREETING"; ls /'
step "an OCI image made by the project (busybox-static), pushed to a local registry"
export CAPSA_TEST_REGISTRY_PLAIN_PORT=5110 CAPSA_TEST_REGISTRY_TOKEN_PORT=5111 \
       CAPSA_TEST_REGISTRY_AUTH_PORT=5112 CAPSA_TEST_REGISTRY_BASIC_PORT=5113
# Laid out as tests/fixtures/build-all.sh leaves fixtures: oci-NAME links to a build.
mkdir -p "$work/fixtures/oci-busybox-demo"
"$root/tests/fixtures/make-oci-busybox.sh" "$work/fixtures/oci-busybox-demo"
ln -s oci-busybox-demo "$work/fixtures/oci-busybox"
trap '"$root/tests/test_registries/stop.sh" "$work/registry" >/dev/null 2>&1' EXIT
"$root/tests/test_registries/start.sh" "$work/registry" "$work/fixtures" >/dev/null
ref="docker://127.0.0.1:5110/public/busybox:latest"
export CAPSA_CACHEDIR="$work/cache"

step "capsa pull --nohttps $ref"
(cd "$work" && "$capsa" pull --nohttps "$ref")
step "capsa inspect --runscript $work/busybox_latest.sif"
"$capsa" inspect --runscript "$work/busybox_latest.sif"
step "capsa run $work/busybox_latest.sif (Cmd [\"sh\"] replaced by the arguments)"
"$capsa" run "$work/busybox_latest.sif" sh -c 'echo "hello from the pulled image, running as uid $(id -u)"'
step "capsa exec $ref (served from the cache: no download)"
APPTAINER_NOHTTPS=1 "$capsa" exec "$ref" busybox uname -m
step "done: $sif and $work/busybox_latest.sif"
