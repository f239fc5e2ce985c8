#!/bin/sh
# Starts (or reuses) the test registries and writes STATE_DIR/env; with FIXTURES_DIR,
# also pushes the OCI test images built there (tests/fixtures/make-oci-*.sh).
# Ports: CAPSA_TEST_REGISTRY_{PLAIN,TOKEN,AUTH,BASIC}_PORT (defaults 5100..5103).
# Usage: start.sh STATE_DIR [FIXTURES_DIR]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
[ $# -ge 1 ] || { echo "usage: start.sh STATE_DIR [FIXTURES_DIR]" >&2; exit 2; }
/usr/bin/python3 -B "$here/testregistry.py" start "$1"
if [ $# -ge 2 ]; then
  # A failed push leaves no registry running behind the error.
  /usr/bin/python3 -B "$here/testregistry.py" push "$1" "$2" || {
    status=$?
    /usr/bin/python3 -B "$here/testregistry.py" stop "$1" >/dev/null 2>&1 || true
    exit "$status"
  }
fi
