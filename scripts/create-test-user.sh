#!/bin/sh
# Creates the unprivileged user the test suite runs every suite as (a second time),
# and makes the machine behave as distributions ship it for unprivileged containers.
set -eu
user="${CAPSA_TEST_USER:-capsa-test}"
[ "$(id -u)" -eq 0 ] || { echo "create-test-user.sh: must run as root" >&2; exit 1; }
if ! id -u "$user" >/dev/null 2>&1; then
  useradd --create-home --shell /bin/sh --comment "capsa unprivileged test user" "$user"
fi
# Subordinate ids for `--fakeroot` builds through newuidmap/newgidmap (useradd adds a range
# when /etc/login.defs asks for one; older users and other setups may lack it). The range
# is the first 65536 ids from 100000 on that no other entry of the file uses.
for file in /etc/subuid /etc/subgid; do
  touch "$file"
  grep -q "^$user:" "$file" && continue
  start=$(awk -F: 'BEGIN {s = 100000} $2 + $3 > s {s = $2 + $3} END {print s}' "$file")
  echo "$user:$start:65536" >> "$file"
done
# Debian ships /dev/fuse 0666; some VM images tighten it to 0600 (see reference notes).
[ -c /dev/fuse ] && chmod 666 /dev/fuse || true
echo "test user: $user (uid $(id -u "$user"))"
