#!/bin/sh
# Stops exactly the processes tests/test_registries/start.sh started for STATE_DIR (pid files,
# checked against each process's command line). The storage is kept for the next start.
# Usage: stop.sh STATE_DIR
set -eu
here=$(cd "$(dirname "$0")" && pwd)
[ $# -eq 1 ] || { echo "usage: stop.sh STATE_DIR" >&2; exit 2; }
exec /usr/bin/python3 -B "$here/testregistry.py" stop "$1"
