#!/bin/sh
# Unpacks LAYOUT:TAG with umoci into OUTDIR/rootfs: the reference root filesystem that
# tests compare capsa's flattened image against (file by file, with tree-manifest.py).
# Run as root: `umoci unpack --rootless` loses group ownership (reference notes), and
# only root can recreate the recorded owners and device nodes. umoci 0.4.7 cannot read
# zstd layers; use the gzip twin of an image (oci-layers for oci-zstd).
# The layout is copied first: umoci takes a lock inside it, and the fixture cache is
# shared and read-only to the tests.
# Usage: umoci-unpack.sh LAYOUT TAG OUTDIR        (OUTDIR must not exist)
set -eu
[ $# -eq 3 ] || { echo "usage: umoci-unpack.sh LAYOUT TAG OUTDIR" >&2; exit 2; }
layout=$1 tag=$2 out=$3
[ "$(id -u)" -eq 0 ] || { echo "umoci-unpack.sh: run as root for exact ownership" >&2; exit 77; }
[ ! -e "$out" ] || { echo "umoci-unpack.sh: $out already exists" >&2; exit 2; }
work=$(mktemp -d "${TMPDIR:-/tmp}/umoci-layout.XXXXXX")
trap 'rm -rf "$work"' EXIT
cp -a "$layout/." "$work/"
umoci --log error unpack --image "$work:$tag" "$out"
