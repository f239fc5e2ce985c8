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
step "done: $sif"
