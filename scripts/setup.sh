#!/bin/sh
# Command 1 of the README: install what building and running need, build capsa and
# capsa-full (Release, build/release; nothing else: the tests are test.sh's), install
# them, run the demo with the installed capsa.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/install-deps.sh" run
"$root/scripts/build.sh" run
cmake --install "$root/build/release" --strip >/dev/null
echo "installed: $(command -v capsa) (+ singularity, apptainer, run-singularity)"
CAPSA=$(command -v capsa) "$root/scripts/demo.sh"
