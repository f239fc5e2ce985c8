#!/bin/sh
# The packages, built and used (test.sh runs it after ctest, never beside it: the .deb puts
# capsa into /usr/bin, which must not change what the parallel suites run). As root:
#   1. the Debian package (package-deb.sh: dpkg-buildpackage, lintian without errors) is
#      installed with dpkg, runs the demo (scripts/demo.sh) as /usr/bin/capsa, finds its
#      configuration in /etc/capsa, and is removed again (purged), whatever happened;
#   2. the RPM (package-rpm.sh: rpmbuild) holds the layout and asks for no glibc above 2.28;
# (The Spack package is checked by ctest: packaging.spack.)
#   scripts/test-packages.sh [BUILD_DIR]
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
[ "$(id -u)" -eq 0 ] || { echo "test-packages.sh: run as root (it installs the .deb)" >&2; exit 1; }
fail() { echo "test-packages.sh: $*" >&2; exit 1; }

deb=$("$root/scripts/package-deb.sh" "$build")
if dpkg-query -W -f '${Status}' capsa 2>/dev/null | grep -q 'install ok installed'; then
  fail "a capsa package is installed already; remove it first (dpkg -r capsa)"
fi
demo=$(mktemp -d "${TMPDIR:-/tmp}/capsa-deb-demo.XXXXXX")
trap 'dpkg --purge capsa >/dev/null 2>&1 || true; rm -rf "$demo"' EXIT
dpkg -i "$deb" >/dev/null
for path in /usr/bin/capsa /usr/bin/singularity /usr/libexec/capsa/capsa-full /etc/capsa/capsa.conf \
  /etc/capsa/network/00_bridge.conflist \
  /usr/share/man/man1/capsa.1.gz /usr/share/bash-completion/completions/singularity; do
  [ -e "$path" ] || fail "the installed package has no $path"
done
# The package's capsa edits /etc/capsa/capsa.conf (the prefix /usr keeps it in /etc).
/usr/bin/capsa config global --set "bind path" "$demo:/capsa-deb-demo" >/dev/null
grep -q "^bind path = $demo:/capsa-deb-demo\$" /etc/capsa/capsa.conf || fail "capsa config global did not edit /etc/capsa/capsa.conf"
/usr/bin/capsa config global --unset "bind path" "$demo:/capsa-deb-demo" >/dev/null
CAPSA=/usr/bin/capsa CAPSA_DEMO_DIR="$demo/demo" "$root/scripts/demo.sh" >"$demo/demo.log" 2>&1 ||
  { tail -30 "$demo/demo.log" >&2; fail "the demo failed with the installed package"; }
grep -q 'hello from the pulled image' "$demo/demo.log" || fail "the demo's pulled image did not run"
dpkg --purge capsa >/dev/null
if [ -e /usr/bin/capsa ] || [ -e /etc/capsa/capsa.conf ]; then fail "dpkg --purge left capsa's files"; fi
echo "deb: $deb installed, ran the demo, removed"

rpm=$("$root/scripts/package-rpm.sh" "$build")
listing=$(rpm -qlp "$rpm" 2>/dev/null)
for path in /usr/bin/capsa /usr/bin/apptainer /usr/libexec/capsa/capsa-full /etc/capsa/capsa.conf \
  /etc/capsa/network/00_bridge.conflist; do
  printf '%s\n' "$listing" | grep -qx "$path" || fail "$rpm has no $path"
done
too_new=$(rpm -qp --requires "$rpm" 2>/dev/null | grep -E 'GLIBC_2\.(2[89]|[3-9][0-9])' | grep -v 'GLIBC_2\.28)' || true)
[ -z "$too_new" ] || fail "$rpm requires a glibc above 2.28: $too_new"
echo "rpm: $rpm"
