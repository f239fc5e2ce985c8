#!/bin/sh
# Image exchange and trust (issue 17), each beside the floor a user could reach by hand on
# the same bytes in the same run:
#   oras push   capsa push oras://   vs  the blob's SHA-256 (openssl) + its upload with curl
#                                        (POST, then one PUT of the whole body: no client does less)
#   oras pull   capsa pull oras://   vs  curl GET of the blob + its SHA-256 (openssl)
#   sign        capsa sign --key     vs  openssl dgst -sign over the partition's bytes
#   verify      capsa verify --key   vs  openssl dgst -verify of that signature
# Ratios are capsa / floor (1.00 = the floor; below 1 capsa beats it). Page cache is left
# warm for both: the work measured is the protocol, hashing and signing, not the disk;
# dirty pages are synced before each step, and the two take turns going first.
#
# Usage: bench/exchange.sh [SIZE_MIB [RUNS]]   defaults: 256 MiB (incompressible), 5 runs
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
size_mib=${1:-256}
runs=${2:-5}
capsa=${CAPSA:-$root/build/src/cli/capsa}
work=$(mktemp -d /var/tmp/capsa-bench-exchange.XXXXXX)
state="$work/registry"
. "$root/bench/lib.sh"
cleanup() { registry_stop "$state"; rm -rf "$work"; }
trap cleanup EXIT
[ -x "$capsa" ] || { echo "bench/exchange.sh: build capsa first ($capsa)" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || { echo "bench/exchange.sh: run as root (it starts the test registry)" >&2; exit 1; }
registry_start "$state" 5140
export CAPSA_CACHEDIR="$work/cache"

# The image: one squashfs partition of random bytes, so no stage can compress it away.
mkdir "$work/tree"
head -c "$((size_mib * 1048576))" /dev/urandom >"$work/tree/payload"
mksquashfs "$work/tree" "$work/part.sqfs" -noappend -quiet -no-progress
"$capsa" sif new "$work/image.sif"
"$capsa" sif add --datatype 4 --groupid 1 --parttype 2 --partfs 1 --partarch 2 "$work/image.sif" "$work/part.sqfs"
# ECDSA P-256: the floor hashes the partition with SHA-256 and signs the digest, as DSSE does.
openssl genpkey -algorithm ec -pkeyopt ec_paramgen_curve:P-256 -out "$work/ec.pem" 2>/dev/null
openssl pkey -in "$work/ec.pem" -pubout -out "$work/ec.pub"

seconds() { date +%s.%N; }
# time_it NAME COMMAND...: appends "NAME seconds" to $work/times.
# Dirty pages are written out first: the step before must not slow this one down.
time_it() {
  name=$1
  shift
  sync
  start=$(seconds)
  "$@" >/dev/null 2>"$work/stderr" || { echo "bench/exchange.sh: $name failed: $*" >&2; cat "$work/stderr" >&2; exit 1; }
  end=$(seconds)
  echo "$name $(echo "$end - $start" | bc)" >>"$work/times"
}

repo="$plain/bench/exchange"
api="http://$plain/v2/bench/exchange"
# SHA-256 by OpenSSL: coreutils' sha256sum is 3-4x slower on the machines measured.
sha256_of() { openssl dgst -sha256 -r "$1" | cut -d' ' -f1; }
floor_push() {
  digest=$(sha256_of "$work/image.sif")
  location=$(curl -sf -X POST -D - -o /dev/null "$api/blobs/uploads/" | tr -d '\r' |
    sed -n 's/^[Ll]ocation: //p')
  case $location in http*) ;; *) location="http://$plain$location" ;; esac
  case $location in *\?*) separator='&' ;; *) separator='?' ;; esac
  curl -sf -X PUT -T "$work/image.sif" -H 'Content-Type: application/octet-stream' \
    "$location${separator}digest=sha256:$digest" -o /dev/null
}
# The digest is known from the manifest: only the download and its check count.
image_digest=$(sha256_of "$work/image.sif")
floor_pull() {
  digest=$image_digest
  curl -sf "$api/blobs/sha256:$digest" -o "$work/floor.sif"
  [ "$(sha256_of "$work/floor.sif")" = "$digest" ]
}
floor_sign() {
  openssl dgst -sha256 -sign "$work/ec.pem" -out "$work/floor.sig" "$work/part.sqfs"
}
floor_verify() {
  openssl dgst -sha256 -verify "$work/ec.pub" -signature "$work/floor.sig" "$work/part.sqfs"
}
run_index=0
while [ "$run_index" -lt "$runs" ]; do
  run_index=$((run_index + 1))
  push_capsa() { time_it "capsa-push" "$capsa" -q push --nohttps "$work/image.sif" "oras://$repo:run$run_index"; }
  pull_capsa() {
    rm -f "$work/pulled.sif"
    time_it "capsa-pull" "$capsa" -q pull --nohttps --disable-cache "$work/pulled.sif" "oras://$repo:run$run_index"
  }
  if [ $((run_index % 2)) -eq 1 ]; then
    push_capsa
    time_it "floor-push" floor_push
    pull_capsa
    time_it "floor-pull" floor_pull
  else
    time_it "floor-push" floor_push
    push_capsa
    time_it "floor-pull" floor_pull
    pull_capsa
  fi
  cmp -s "$work/pulled.sif" "$work/image.sif" || { echo "bench/exchange.sh: the pulled SIF differs" >&2; exit 1; }
  cp "$work/image.sif" "$work/signed.sif"
  time_it "capsa-sign" "$capsa" -q sign --key "$work/ec.pem" "$work/signed.sif"
  time_it "floor-sign" floor_sign
  time_it "capsa-verify" "$capsa" -q verify --key "$work/ec.pub" "$work/signed.sif"
  time_it "floor-verify" floor_verify
done

/usr/bin/python3 - "$work/times" "$size_mib" "$runs" <<'PY'
import statistics, sys
times = {}
for line in open(sys.argv[1]):
    name, value = line.split()
    times.setdefault(name, []).append(float(value))
print(f"image exchange, {sys.argv[2]} MiB SIF (incompressible), median of {sys.argv[3]} runs, seconds")
print(f"{'step':8} {'capsa':>8} {'floor':>8} {'capsa/floor':>12}  floor")
floors = {"push": "openssl sha256 + curl POST/PUT", "pull": "curl GET + openssl sha256",
          "sign": "openssl dgst -sha256 -sign", "verify": "openssl dgst -sha256 -verify"}
for step, floor in floors.items():
    c = statistics.median(times[f"capsa-{step}"]); f = statistics.median(times[f"floor-{step}"])
    print(f"{step:8} {c:8.3f} {f:8.3f} {c / f:12.2f}  {floor}")
PY
