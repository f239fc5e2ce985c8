#!/bin/sh
# Instance latency, not a test: how long `capsa instance start IMAGE NAME` takes until the
# instance can be joined (the command returns then), and `exec instance://NAME /bin/true`
# against a plain `exec IMAGE /bin/true` and the native /bin/true, as root and as the
# unprivileged test user. hyperfine runs each command without a shell (the instance is
# stopped by --prepare between two starts, outside the timing); the table shows medians
# in ms and the ratios to a plain exec of the same user.
# Needs root, hyperfine, jq and the unprivileged test user.
#   bench/instance.sh [IMAGE.sif] [RUNS]     defaults: busybox fixture, 30
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
capsa=${CAPSA:-$root/build/src/cli/capsa}
image=${1:-}
[ -n "$image" ] || image="$root/tests/fixtures/upstream/sif/real/busybox_amd64.sif"
runs=${2:-30}
user=${CAPSA_TEST_USER:-capsa-test}

. "$root/bench/lib.sh"
bench_preflight instance.sh "instances as root and as the test user"
for tool in hyperfine jq; do
  command -v "$tool" >/dev/null || { echo "bench/instance.sh: needs $tool" >&2; exit 1; }
done

name="bench-instance-$$"
bench_cleanup() {
  "$capsa" instance stop -F "$name" >/dev/null 2>&1 || true
  "$root/tests/support/as-test-user" "$capsa" instance stop -F "$name" >/dev/null 2>&1 || true
}
bench_workdir instance
cp "$image" "$work/image.sif"
chmod 644 "$work/image.sif"
cd "$work"

# measure WHO: the four figures for root (WHO=root) or the test user, into WHO.json.
measure() {
  who=$1
  as=""
  [ "$who" = root ] || as="$root/tests/support/as-test-user"
  # The instance joined by the exec rows; stopped again before the start rows.
  $as "$capsa" instance start "$work/image.sif" "$name" >/dev/null 2>&1
  $as hyperfine -N --warmup 3 --runs "$runs" --export-json "$who-run.json" --style none \
    -n native "/bin/true" \
    -n exec "$capsa exec $work/image.sif /bin/true" \
    -n join "$capsa exec instance://$name /bin/true" > /dev/null 2> "$who-hyperfine.log" ||
    { echo "bench/instance.sh: hyperfine failed ($who):" >&2; tail -5 "$who-hyperfine.log" >&2; exit 1; }
  $as "$capsa" instance stop -F "$name" >/dev/null 2>&1
  # --prepare runs through a shell; the instance it stops is the one the last run started.
  $as hyperfine -N --runs "$runs" --export-json "$who-start.json" --style none \
    --prepare "sh -c '$capsa instance stop -F $name 2>/dev/null || true'" \
    -n start "$capsa instance start $work/image.sif $name" > /dev/null 2>> "$who-hyperfine.log" ||
    { echo "bench/instance.sh: hyperfine failed ($who):" >&2; tail -5 "$who-hyperfine.log" >&2; exit 1; }
  $as "$capsa" instance stop -F "$name" >/dev/null 2>&1
  jq -s '[.[].results[] | {(.command): (.median * 1000)}] | add' "$who-run.json" "$who-start.json" > "$who.json"
}

measure root
chmod 777 "$work"
measure "$user"

printf '%-12s %10s %10s %10s %10s %12s %12s\n' "" "native" "exec" "join" "start" "join/exec" "start/exec"
for who in root "$user"; do
  jq -r --arg who "$who" '"\($who) \(.native) \(.exec) \(.join) \(.start) \(.join / .exec) \(.start / .exec)"' "$who.json" |
    while read -r w n e j s r1 r2; do
      printf '%-12s %7.2f ms %7.2f ms %7.2f ms %7.2f ms %12.2f %12.2f\n' "$w" "$n" "$e" "$j" "$s" "$r1" "$r2"
    done
done
echo "(medians of $runs runs; image $(basename "$image"); $(nproc) CPUs; kernel $(uname -r))"
