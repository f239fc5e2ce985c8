#!/bin/sh
# What a CNI network costs a container start, not a test: `exec IMAGE /bin/true` as root
# with the host's network (capsa's default), with --network none (a namespace with only a
# loopback), and on a bridge network like Apptainer's default (bridge + host-local +
# firewall + portmap, Debian's containernetworking-plugins), with and without a port
# mapping; the native /bin/true beside them. hyperfine runs each without a shell, the
# rows taking turns in rounds; the table shows mean, p50 and p99 in ms and the difference
# to the host-network start, which is what the network adds. A start ends when the
# command has ended; the detaching (CNI DEL) runs after it, in a process of its own (not
# in these times: it overlaps the next start); at the end the script checks that every
# start's address was given back.
# Every start mounts the image (CAPSA_KEEP_IMAGE_SECONDS=0).
# Needs root, hyperfine, containernetworking-plugins and iptables.
#   bench/network.sh [RUNS]     default 30
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
capsa=${CAPSA:-$root/build/src/cli/capsa}
runs=${1:-30}
[ "$(id -u)" -eq 0 ] || { echo "bench/network.sh: run as root (CNI networks are root's)" >&2; exit 1; }
[ -x "$capsa" ] || { echo "bench/network.sh: build capsa first ($capsa)" >&2; exit 1; }
command -v hyperfine >/dev/null || { echo "bench/network.sh: needs hyperfine" >&2; exit 1; }
[ -x /usr/lib/cni/bridge ] || { echo "bench/network.sh: needs containernetworking-plugins" >&2; exit 1; }

. "$root/bench/lib.sh"
bridge=capsabench0
bench_cleanup() { ip link del "$bridge" 2>/dev/null || true; }
bench_workdir network
cd "$work"
cp "$root/tests/fixtures/upstream/sif/real/busybox_amd64.sif" image.sif
mkdir network
cat > network/50_bench.conflist <<JSON
{"cniVersion": "1.0.0", "name": "bench", "plugins": [
  {"type": "bridge", "bridge": "$bridge", "isGateway": true, "ipMasq": true,
   "ipam": {"type": "host-local", "subnet": "10.239.0.0/16", "routes": [{"dst": "0.0.0.0/0"}], "dataDir": "$work/ipam"}},
  {"type": "firewall"},
  {"type": "portmap", "capabilities": {"portMappings": true}, "snat": true}]}
JSON
echo "cni configuration path = $work/network" > capsa.conf
export CAPSA_CONFIG="$work/capsa.conf" CAPSA_KEEP_IMAGE_SECONDS=0

rounds=5
per_round=$(( (runs + rounds - 1) / rounds ))
i=1
while [ $i -le $rounds ]; do
  hyperfine -N --warmup 3 --runs "$per_round" --export-json "round$i.json" --style none \
    -n "native /bin/true" "/bin/true" \
    -n "capsa, host network" "$capsa exec image.sif /bin/true" \
    -n "capsa, --network none" "$capsa exec --net --network none image.sif /bin/true" \
    -n "capsa, --network bridge" "$capsa exec --net --network bench image.sif /bin/true" \
    -n "capsa, bridge + portmap" "$capsa exec --net --network bench --network-args portmap=18999:80/tcp image.sif /bin/true" \
    > /dev/null 2> "hyperfine$i.log" || { cat "hyperfine$i.log" >&2; exit 1; }
  i=$((i + 1))
done
sleep 1  # the last detaching
echo "$(nproc) CPUs, $runs runs each in $rounds rounds, kernel $(uname -r)"
/usr/bin/python3 - round*.json <<'PY'
import json, sys
rows = {}
for path in sys.argv[1:]:
    for r in json.load(open(path))["results"]:
        rows.setdefault(r["command"], []).extend(r["times"])
def pct(times, p):
    s = sorted(times)
    return s[min(len(s) - 1, int(round(p / 100 * (len(s) - 1))))]
host = sum(rows["capsa, host network"]) / len(rows["capsa, host network"])
print("%-26s %9s %9s %9s %16s" % ("command", "mean ms", "p50 ms", "p99 ms", "- host net ms"))
for name, times in rows.items():
    mean = sum(times) / len(times)
    print("%-26s %9.2f %9.2f %9.2f %16.2f" % (name, mean * 1e3, pct(times, 50) * 1e3, pct(times, 99) * 1e3,
                                            (mean - host) * 1e3))
PY
left=$(ls "$work/ipam/bench" 2>/dev/null | grep -vc -e lock -e last_reserved || true)
echo "addresses still held after the runs: $left (0: every start was detached)"
