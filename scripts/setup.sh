#!/bin/sh
# Command 1 of the README: install dependencies, build, install capsa, and run the demo.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/install-deps.sh"
"$root/scripts/build.sh"
cmake --install "$root/build" --strip >/dev/null
echo "installed: $(command -v capsa) (+ singularity, apptainer, run-singularity)"
"$root/scripts/demo.sh"
