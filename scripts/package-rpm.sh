#!/bin/sh
# Builds capsa-VERSION-1.x86_64.rpm with rpmbuild from the release tarball, for RHEL 8 and
# newer (packaging/rpm/capsa.spec). Nothing is compiled: the tarball's portable binaries
# are packaged as they are.
#   scripts/package-rpm.sh [BUILD_DIR [OUT_DIR]]     BUILD_DIR: build, OUT_DIR: BUILD_DIR/rpm
# Prints the .rpm's path. Needs rpm (rpmbuild) and what package-tarball.sh needs.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
out="${2:-$build/rpm}"
command -v rpmbuild >/dev/null || { echo "package-rpm.sh: rpmbuild not found (scripts/install-deps.sh)" >&2; exit 1; }
rm -rf "$out"
mkdir -p "$out/SOURCES"
tarball=$("$root/scripts/package-tarball.sh" "$build" "$out/SOURCES")
version=$(basename "$tarball" | sed 's/^capsa-\(.*\)-x86_64\.tar\.gz$/\1/')
rpmbuild -bb --quiet --define "_topdir $out" --define "capsa_version $version" \
  "$root/packaging/rpm/capsa.spec" >"$out/rpmbuild.log" 2>&1 ||
  { tail -30 "$out/rpmbuild.log" >&2; echo "package-rpm.sh: rpmbuild failed ($out/rpmbuild.log)" >&2; exit 1; }
rpm="$out/RPMS/x86_64/capsa-$version-1.x86_64.rpm"
[ -f "$rpm" ] || { echo "package-rpm.sh: rpmbuild made no $rpm" >&2; exit 1; }
echo "$rpm"
