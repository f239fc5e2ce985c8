#!/bin/sh
# Builds the Debian package capsa_VERSION_amd64.deb with dpkg-buildpackage from a build tree
# that scripts/build.sh already built (and the tests ran), then checks it with lintian.
#   scripts/package-deb.sh [BUILD_DIR [OUT_DIR]]     BUILD_DIR: build, OUT_DIR: BUILD_DIR/deb
# Prints the .deb's path. packaging/debian holds the packaging; it is copied into a staging
# source tree here (beside the build tree's install, prefix /usr, in prebuilt/) rather than
# kept at the repository's root, so that dpkg-buildpackage never runs in (or cleans) the
# checkout and packaging compiles nothing again. The package links Debian's shared libraries
# (dh_shlibdeps names them); the release tarball is the package for other distributions.
# Needs: debhelper, lintian (scripts/install-deps.sh).
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
out="${2:-$build/deb}"
for tool in dpkg-buildpackage dh lintian; do
  command -v "$tool" >/dev/null || { echo "package-deb.sh: $tool not found (scripts/install-deps.sh)" >&2; exit 1; }
done
cmake --build "$build" --target capsa capsa-full capsa-completion-and-man >/dev/null
version=$(sed -n 's/^CMAKE_PROJECT_VERSION:STATIC=//p' "$build/CMakeCache.txt")
changelog_version=$(dpkg-parsechangelog -l "$root/packaging/debian/changelog" -S Version)
[ "$changelog_version" = "$version" ] ||
  { echo "package-deb.sh: packaging/debian/changelog is at $changelog_version, the project at $version: add an entry" >&2; exit 1; }
rm -rf "$out"
source_tree="$out/capsa-$version"
mkdir -p "$source_tree"
cp -a "$root/packaging/debian" "$source_tree/debian"
DESTDIR="$source_tree/prebuilt" cmake --install "$build" --prefix /usr >/dev/null
# /usr's configuration lives in /etc (src/util/install_layout.hpp finds it there).
mv "$source_tree/prebuilt/usr/etc" "$source_tree/prebuilt/etc"
(cd "$source_tree" && dpkg-buildpackage -b -us -uc >"$out/dpkg-buildpackage.log" 2>&1) ||
  { tail -40 "$out/dpkg-buildpackage.log" >&2; echo "package-deb.sh: dpkg-buildpackage failed ($out/dpkg-buildpackage.log)" >&2; exit 1; }
deb="$out/capsa_${version}_amd64.deb"
[ -f "$deb" ] || { echo "package-deb.sh: dpkg-buildpackage made no $deb" >&2; exit 1; }
# Errors fail the package; warnings are printed for whoever reads the log.
lintian --fail-on error "$deb" >&2 || { echo "package-deb.sh: lintian found errors in $deb" >&2; exit 1; }
echo "$deb"
