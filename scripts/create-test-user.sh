#!/bin/sh
# Creates the unprivileged user the test suite runs every suite as (a second time), a
# second unprivileged user who plays the other side in tests/adversarial (a user who
# attacks another user, or root acting for one), and makes the machine behave as
# distributions ship it for unprivileged containers.
set -eu
user="${CAPSA_TEST_USER:-capsa-test}"
other="${CAPSA_TEST_OTHER_USER:-capsa-other}"
[ "$(id -u)" -eq 0 ] || { echo "create-test-user.sh: must run as root" >&2; exit 1; }
if ! id -u "$user" >/dev/null 2>&1; then
  useradd --create-home --shell /bin/sh --comment "capsa unprivileged test user" "$user"
fi
if ! id -u "$other" >/dev/null 2>&1; then
  useradd --create-home --shell /bin/sh --comment "capsa second unprivileged test user" "$other"
fi
# Subordinate ids for `--fakeroot` builds through newuidmap/newgidmap (useradd adds a range
# when /etc/login.defs asks for one; older users and other setups may lack it). The range
# is the first 65536 ids from 100000 on that no other entry of the file uses.
for file in /etc/subuid /etc/subgid; do
  touch "$file"
  for name in "$user" "$other"; do
    grep -q "^$name:" "$file" && continue
    start=$(awk -F: 'BEGIN {s = 100000} $2 + $3 > s {s = $2 + $3} END {print s}' "$file")
    echo "$name:$start:65536" >> "$file"
  done
done
# Debian ships /dev/fuse 0666; some VM images tighten it to 0600 (see reference notes).
[ -c /dev/fuse ] && chmod 666 /dev/fuse || true
echo "test users: $user (uid $(id -u "$user")), $other (uid $(id -u "$other"))"
