#!/bin/sh
# Stops the Grid Engine cell tests/gridengine/start.sh STATE started, and any job of it.
set -u
state=$(cd "$1" 2>/dev/null && pwd) || exit 0
[ -f "$state/env" ] || exit 0
. "$state/env"
# Ours: the processes whose environment has the mark start.sh gives the daemons (their
# shepherds inherit it).
ours() {
  for dir in /proc/[0-9]*; do
    tr '\0' '\n' 2>/dev/null <"$dir/environ" | grep -qxF "CAPSA_TEST_SGE_STATE=$state" && echo "${dir#/proc/}"
  done
}
[ -n "$(ours)" ] || exit 0
# The orderly way first (the execution daemon ends its jobs), then whatever is left.
timeout 10 qconf -ke all >/dev/null 2>&1
timeout 10 qconf -km >/dev/null 2>&1
tries=0
while [ -n "$(ours)" ] && [ "$tries" -lt 50 ]; do sleep 0.1; tries=$((tries + 1)); done
for pid in $(ours); do kill -9 "$pid" 2>/dev/null; done
exit 0
