#!/bin/sh
# Command 1 of the README: install what building and running need, build capsa and
# capsa-full (nothing else: the tests are test.sh's), install them, run the demo.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/install-deps.sh" run
"$root/scripts/build.sh" run
cmake --install "$root/build" --strip >/dev/null
echo "installed: $(command -v capsa) (+ singularity, apptainer, run-singularity)"
"$root/scripts/demo.sh"
