#!/bin/sh
# Command 2 of the README (and all that .ci/run does): the whole test suite.
# Installs what is missing, builds everything (tests and fuzzers too), creates the
# unprivileged test user, checks the style of changed files, then runs ctest: every suite
# as root and again as that user, the siftool oracle comparisons, and each libFuzzer
# target for a short bounded time; then builds the .deb and the .rpm, installs the .deb
# and runs the demo from it (scripts/test-packages.sh), and prints a short start-up
# benchmark (not a test).
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/install-deps.sh" test
"$root/scripts/create-test-user.sh"
"$root/scripts/build.sh" all
"$root/scripts/check-style.sh"
cd "$root/build"
ctest --output-on-failure -j "$(nproc)"
# The packages after the suites, never beside them: the .deb is installed into /usr/bin.
"$root/scripts/test-packages.sh" "$root/build"
# This machine's start-up figures, for the record: printed, never asserted (a timed
# assertion does not belong in a test). The short form of bench/start.sh, about 15 s.
echo "== start-up figures of this machine (bench/start.sh \"\" 10 8; not a test)"
"$root/bench/start.sh" "" 10 8 || echo "bench/start.sh failed: no figures this time"
