#!/bin/sh
# Makes OUTDIR/mpi.sif from the mpi-image fixture (tests/fixtures/make-mpi-image.sh) with
# capsa's own SIF commands: the definition file, then the squashfs as the primary system
# partition. Kept when it is newer than the fixture's squashfs.
#   tests/mpi/make-sif.sh CAPSA FIXTURE_DIR OUTDIR
set -eu
capsa=$1
fixture=$2
outdir=$3
mkdir -p "$outdir"
chmod 755 "$outdir"
sif="$outdir/mpi.sif"
if [ -f "$sif" ] && [ "$sif" -nt "$fixture/rootfs.squashfs" ] && [ "$sif" -nt "$capsa" ]; then
  echo "mpi.sif: up to date ($sif)"
  exit 0
fi
rm -f "$sif.tmp"
"$capsa" sif new "$sif.tmp"
"$capsa" sif add --datatype 1 --groupid 1 "$sif.tmp" "$fixture/mpi-image.def"
"$capsa" sif add --datatype 4 --partfs 1 --parttype 2 --partarch 2 --groupid 1 "$sif.tmp" "$fixture/rootfs.squashfs"
chmod 755 "$sif.tmp"
mv "$sif.tmp" "$sif"
echo "mpi.sif: made $sif"
