#!/bin/sh
# A stand-in for `nvidia-ctk hook ...` as a CDI createContainer hook (tests/gpu): it finds
# the container's root as the real hooks do, from the OCI state on stdin (its "bundle")
# and the bundle's config.json ("root": {"path": ...}), and then
#   create-symlinks --link TARGET::LINK   makes LINK -> TARGET in the root
#   update-ldcache --folder DIR           records DIR in ROOT/etc/ld.so.conf.d/capsa-cdi.conf
# Every call appends "ARGS | env NAMES | status STATUS" to ROOT/cdi-hook.log.
set -eu
state=$(cat)
bundle=$(printf '%s' "$state" | sed -n 's/.*"bundle":"\([^"]*\)".*/\1/p')
status=$(printf '%s' "$state" | sed -n 's/.*"status":"\([^"]*\)".*/\1/p')
root=$(sed -n 's/.*"root":{[^}]*"path":"\([^"]*\)".*/\1/p' "$bundle/config.json")
[ -d "$root" ] || { echo "fake nvidia-ctk: no container root in $bundle/config.json" >&2; exit 1; }
echo "$* | env $(env | sed 's/=.*//' | grep -v '^PWD$' | sort | tr '\n' ' ')| status $status" >> "$root/cdi-hook.log"
[ "${1:-}" = hook ] || exit 0
case "${2:-}" in
  create-symlinks)
    link=$4
    mkdir -p "$root$(dirname "${link#*::}")"
    ln -sf "${link%%::*}" "$root${link#*::}" ;;
  update-ldcache)
    mkdir -p "$root/etc/ld.so.conf.d"
    echo "$4" >> "$root/etc/ld.so.conf.d/capsa-cdi.conf" ;;
  fail)
    echo "fake nvidia-ctk: asked to fail" >&2
    exit 3 ;;
esac
