#!/bin/sh
# Stops what tests/slurm/start.sh STATE started: the slurmd daemons, slurmctld, munged.
# Only processes whose pid file is in STATE and whose command line names STATE are
# signalled; the state (logs, job output) stays for inspection.
set -u
state=$(cd "$1" 2>/dev/null && pwd) || exit 0

stop_pidfile() {
  [ -f "$1" ] || return 0
  pid=$(cat "$1")
  if [ -n "$pid" ] && grep -qF "$state" "/proc/$pid/cmdline" 2>/dev/null; then
    kill "$pid" 2>/dev/null
    n=0
    while kill -0 "$pid" 2>/dev/null && [ "$n" -lt 100 ]; do sleep 0.1; n=$((n + 1)); done
    kill -9 "$pid" 2>/dev/null
  fi
  rm -f "$1"
}

for pidfile in "$state"/slurmd-*.pid; do stop_pidfile "$pidfile"; done
stop_pidfile "$state/slurmctld.pid"
stop_pidfile "$state/munge/munged.pid"
# The nodes' TmpFS under /tmp (the name start.sh recorded; nothing else is removed).
if [ -f "$state/tmpfs" ]; then
  case $(cat "$state/tmpfs") in
    /tmp/capsa-test-slurm-[0-9]*) rm -rf "$(cat "$state/tmpfs")" ;;
  esac
  rm -f "$state/tmpfs"
fi
echo "slurm: stopped ($state)"
