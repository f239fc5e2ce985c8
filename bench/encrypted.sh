#!/bin/sh
# Encrypted SIF images (docs/encryption.md), not a test: the same tree packed plain and
# encrypted (`capsa build --encrypt`, gocryptfs), then for each, as root and as the
# unprivileged user:
#   start  `capsa exec IMG /bin/true`, median of RUNS (warm page cache)
#   read   `capsa exec IMG cat /data/*` with the page cache dropped first (FILES files of
#          2 MiB of random data: a cold read through every layer)
# Prints seconds and the encrypted/plain ratio. Needs root (drop_caches) and the test user.
#   bench/encrypted.sh [FILES] [RUNS]       defaults: 64 5
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
capsa=${CAPSA:-$root/build/src/cli/capsa}
files=${1:-64}
runs=${2:-5}
user=${CAPSA_TEST_USER:-capsa-test}
passphrase="bench passphrase $$"

. "$root/bench/lib.sh"
bench_preflight encrypted.sh "drop_caches"
command -v gocryptfs >/dev/null || { echo "bench/encrypted.sh: install gocryptfs" >&2; exit 1; }

bench_workdir encrypted
tree=$work/tree
mkdir -p "$tree/bin" "$tree/data" "$tree/etc" "$tree/.singularity.d/env"
cp /bin/busybox "$tree/bin/busybox"
for applet in sh true cat; do ln -s busybox "$tree/bin/$applet"; done
echo "root:x:0:0:root:/root:/bin/sh" > "$tree/etc/passwd"
echo "root:x:0:" > "$tree/etc/group"
i=0
while [ "$i" -lt "$files" ]; do
  head -c 2097152 /dev/urandom > "$tree/data/f$i"
  i=$((i + 1))
done
chmod -R a+rX "$tree"
"$capsa" -q build "$work/plain.sif" "$tree" >/dev/null
APPTAINER_ENCRYPTION_PASSPHRASE=$passphrase "$capsa" -q build --encrypt "$work/encrypted.sif" "$tree" >/dev/null
chmod 644 "$work/plain.sif" "$work/encrypted.sif"

# as WHO (root or the test user): the command, with the key in the environment (read
# from a file the test user may read: never on a command line, where ps shows it).
printf '%s' "$passphrase" > "$work/passphrase"
chmod 644 "$work/passphrase"
as() {
  who=$1
  shift
  if [ "$who" = root ]; then
    (
      APPTAINER_ENCRYPTION_PASSPHRASE=$passphrase CAPSA_KEEP_IMAGE_SECONDS=0
      export APPTAINER_ENCRYPTION_PASSPHRASE CAPSA_KEEP_IMAGE_SECONDS
      exec "$@"
    )
  else
    # "--": su takes options anywhere, and the command's own "-c" would replace this one.
    # shellcheck disable=SC2016 # expanded by the test user's shell
    su -s /bin/sh -c 'APPTAINER_ENCRYPTION_PASSPHRASE=$(cat "$0") CAPSA_KEEP_IMAGE_SECONDS=0
      export APPTAINER_ENCRYPTION_PASSPHRASE CAPSA_KEEP_IMAGE_SECONDS
      exec "$@"' -- "$user" "$work/passphrase" "$@"
  fi
}

seconds() { python3 -c 'import sys,time; print(f"{time.time():.6f}")'; }

median_start() {
  who=$1 image=$2
  n=0
  : > "$work/times"
  while [ "$n" -lt "$runs" ]; do
    t0=$(seconds)
    as "$who" "$capsa" exec "$image" /bin/true
    t1=$(seconds)
    python3 -c "print($t1 - $t0)" >> "$work/times"
    n=$((n + 1))
  done
  sort -g "$work/times" | awk '{a[NR]=$1} END {printf "%.3f", a[int((NR+1)/2)]}'
}

cold_read() {
  who=$1 image=$2
  sync
  echo 3 > /proc/sys/vm/drop_caches
  t0=$(seconds)
  as "$who" "$capsa" exec "$image" sh -c 'cat /data/* > /dev/null'
  t1=$(seconds)
  python3 -c "print(f'{$t1 - $t0:.3f}')"
}

printf '%-6s %-6s %10s %10s %7s\n' who what plain encrypted ratio
for who in root user; do
  p=$(median_start "$who" "$work/plain.sif"); e=$(median_start "$who" "$work/encrypted.sif")
  printf '%-6s %-6s %10s %10s %7s\n' "$who" start "$p" "$e" "$(python3 -c "print(f'{$e / $p:.2f}')")"
  p=$(cold_read "$who" "$work/plain.sif"); e=$(cold_read "$who" "$work/encrypted.sif")
  printf '%-6s %-6s %10s %10s %7s\n' "$who" read "$p" "$e" "$(python3 -c "print(f'{$e / $p:.2f}')")"
done
echo "($files files of 2 MiB; start: median of $runs runs, seconds)"
