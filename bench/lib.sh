# Helpers shared by the bench scripts; sourced (`. "$root/bench/lib.sh"`) once $root
# (the source tree) is set. $work is the run's scratch directory (bench_workdir).

bench_fixtures=/var/tmp/capsa-test-fixtures

# bench_preflight SCRIPT WHY-ROOT: stops the script with one line unless it runs as root,
# $capsa is built and the unprivileged test user $user exists.
bench_preflight() {
  [ "$(id -u)" -eq 0 ] || { echo "bench/$1: run as root ($2)" >&2; exit 1; }
  [ -x "$capsa" ] || { echo "bench/$1: build capsa first ($capsa)" >&2; exit 1; }
  id -u "$user" >/dev/null 2>&1 || { echo "bench/$1: user $user missing (scripts/create-test-user.sh)" >&2; exit 1; }
}

# registry_start STATE FIRST_PORT: builds the test fixtures (or reuses them) and starts a
# private test registry (tests/test_registries/start.sh) with its state in STATE, on
# FIRST_PORT..FIRST_PORT+3 unless CAPSA_TEST_REGISTRY_*_PORT already name ports (other
# people's registries run on the tests' ports). Sets $plain and $tls to the plain-HTTP and
# the TLS (token) endpoints.
registry_start() {
  export CAPSA_TEST_REGISTRY_PLAIN_PORT=${CAPSA_TEST_REGISTRY_PLAIN_PORT:-$2} \
         CAPSA_TEST_REGISTRY_TOKEN_PORT=${CAPSA_TEST_REGISTRY_TOKEN_PORT:-$(($2 + 1))} \
         CAPSA_TEST_REGISTRY_AUTH_PORT=${CAPSA_TEST_REGISTRY_AUTH_PORT:-$(($2 + 2))} \
         CAPSA_TEST_REGISTRY_BASIC_PORT=${CAPSA_TEST_REGISTRY_BASIC_PORT:-$(($2 + 3))}
  "$root/tests/fixtures/build-all.sh" "$bench_fixtures" >/dev/null
  "$root/tests/test_registries/start.sh" "$1" "$bench_fixtures" >/dev/null
  plain="127.0.0.1:$CAPSA_TEST_REGISTRY_PLAIN_PORT"
  tls="127.0.0.1:$CAPSA_TEST_REGISTRY_TOKEN_PORT"
}

# registry_stop STATE: stops the registry registry_start started there (if it did).
registry_stop() { "$root/tests/test_registries/stop.sh" "$1" >/dev/null 2>&1 || true; }

# Bytes in use on the file system holding $work (every cache and temporary of a run).
fs_used() { df --output=used -B1 "$work" | tail -1 | tr -d ' '; }

# run NAME OUTPUT COMMAND...: times COMMAND with the page cache dropped first, samples
# disk use while it runs, and appends "NAME wall user sys rss_kb peak_disk output_size"
# to $work/results.
run() {
  name=$1 output=$2
  shift 2
  sync
  echo 3 > /proc/sys/vm/drop_caches
  base=$(fs_used)
  peak_file="$work/$name.peak"
  echo 0 > "$peak_file"
  ( while :; do used=$(fs_used); peak=$(cat "$peak_file"); [ "$used" -gt "$peak" ] && echo "$used" > "$peak_file"; sleep 0.2; done ) &
  sampler=$!
  /usr/bin/time -f "%e %U %S %M" -o "$work/$name.time" "$@" >"$work/$name.log" 2>&1 || { kill "$sampler"; echo "$name failed:"; tail -5 "$work/$name.log"; return 1; }
  kill "$sampler"; wait "$sampler" 2>/dev/null || true
  read -r wall user sys rss_kb < "$work/$name.time"
  peak=$(( $(cat "$peak_file") - base ))
  size=$(stat -c %s "$output")
  echo "$name $wall $user $sys $rss_kb $peak $size" >> "$work/results"
}

# /dev/fuse opened to every user as distributions ship it (mode 0666) for the unprivileged
# runs; fuse_restore puts back the mode it had.
fuse_open() {
  fuse_mode=$(stat -c %a /dev/fuse)
  chmod 666 /dev/fuse
}
fuse_restore() { [ -z "${fuse_mode:-}" ] || chmod "$fuse_mode" /dev/fuse; }

# bench_workdir NAME: makes $work (/var/tmp/capsa-bench-NAME-XXXXXX, mode 755: the test
# user's runs read it), opens /dev/fuse to every user, and on exit runs the script's own
# bench_cleanup when it defines one, puts /dev/fuse back and removes $work.
bench_workdir() {
  work=$(mktemp -d "/var/tmp/capsa-bench-$1-XXXXXX")
  trap bench_exit EXIT
  trap 'exit 130' INT TERM
  chmod 755 "$work"
  fuse_open
}
bench_exit() {
  if command -v bench_cleanup >/dev/null 2>&1; then bench_cleanup; fi
  fuse_restore
  rm -rf "$work"
}
