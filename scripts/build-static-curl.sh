#!/bin/sh
# Builds the static libcurl that the portable binaries (capsa-portable, capsa-full-portable:
# the release tarball's and the packages') link, and prints the path of its libcurl.a.
#   scripts/build-static-curl.sh [CACHE_DIR]     CACHE_DIR: /var/tmp/capsa-portable-deps
# Why not Debian's libcurl.a: it is built with LDAP, GSS-API (Kerberos), libpsl, librtmp and
# libssh2, and Kerberos ships no static library while the shared ones need glibc 2.33 or
# newer, above the tarball's floor (RHEL 8, glibc 2.28). capsa needs HTTP(S) only, so the same
# curl source Debian ships (`apt-get source curl`, through a private apt configuration: the
# system's sources list has no deb-src and is left alone) is built with those features off.
# The result is cached by version: a re-run costs nothing.
set -eu
cache="${1:-/var/tmp/capsa-portable-deps}"
version=$(dpkg-query -W -f '${Version}' libcurl4-openssl-dev 2>/dev/null) ||
  { echo "build-static-curl.sh: libcurl4-openssl-dev is not installed (scripts/install-deps.sh)" >&2; exit 1; }
prefix="$cache/curl-$version"
if [ -f "$prefix/lib/libcurl.a" ]; then
  echo "$prefix/lib/libcurl.a"
  exit 0
fi
work="$cache/work-curl-$$"
rm -rf "$work"
mkdir -p "$work/apt/lists/partial" "$work/apt/cache/archives/partial" "$work/apt/parts"
trap 'rm -rf "$work"' EXIT
suite=$(sed -n 's/^VERSION_CODENAME=//p' /etc/os-release)
cat >"$work/apt/parts/debian-src.sources" <<EOF
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: $suite
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
apt_opts="-o Dir::Etc::SourceList=/dev/null -o Dir::Etc::SourceParts=$work/apt/parts
  -o Dir::State::Lists=$work/apt/lists -o Dir::Cache=$work/apt/cache -o Debug::NoLocking=1
  -o APT::Sandbox::User=root"
cd "$work"
# shellcheck disable=SC2086  # the options are separate words
if ! apt-get -q $apt_opts update >"$work/apt.log" 2>&1 ||
  ! apt-get -q $apt_opts source --download-only "curl=$version" >>"$work/apt.log" 2>&1; then
  cat "$work/apt.log" >&2
  echo "build-static-curl.sh: cannot fetch curl $version's source (deb-src)" >&2
  exit 1
fi
tar -xzf curl_*.orig.tar.gz
cd curl-*/
# Only what the registry client uses: HTTP(S) over OpenSSL, gzip/zstd content, proxies.
# No CA bundle path is compiled in: OpenSSL's default (and SSL_CERT_FILE) applies, and capsa
# picks the distribution's bundle at run time (registry/http.cpp).
./configure -q --prefix="$prefix" --disable-shared --enable-static --with-pic \
  --with-openssl --with-zlib --with-zstd --without-brotli --without-libpsl --without-libidn2 \
  --without-nghttp2 --without-librtmp --without-libssh2 --without-gssapi --disable-ldap \
  --disable-ldaps --disable-rtsp --disable-dict --disable-telnet --disable-tftp --disable-pop3 \
  --disable-imap --disable-smtp --disable-gopher --disable-mqtt --disable-smb --disable-ntlm \
  --disable-manual --disable-docs --without-ca-bundle --without-ca-path --with-ca-fallback \
  >"$work/configure.log" 2>&1 || { tail -30 "$work/configure.log" >&2; exit 1; }
make -s -C lib -j "$(nproc)" >"$work/make.log" 2>&1 || { tail -30 "$work/make.log" >&2; exit 1; }
make -s -C lib install >/dev/null
make -s -C include install >/dev/null
echo "$prefix/lib/libcurl.a"
