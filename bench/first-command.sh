#!/bin/sh
# Times the README's first command (scripts/setup.sh) as a newcomer meets it: a fresh
# Debian 12 root file system (debootstrap minbase plus git), a clone of this checkout in
# it, nothing else installed, apt reachable. The root is entered with chroot on this
# machine, so the build runs on this machine's cores; apt's downloads count.
# Needs root and debootstrap. Leaves nothing mounted; the root stays in WORK for a look.
#   bench/first-command.sh [WORK]      default WORK: a new /var/tmp/capsa-first-command-XXXXXX
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
[ "$(id -u)" -eq 0 ] || { echo "bench/first-command.sh: run as root (debootstrap, chroot)" >&2; exit 1; }
command -v debootstrap >/dev/null || { echo "bench/first-command.sh: needs debootstrap (apt-get install debootstrap)" >&2; exit 1; }
work=${1:-$(mktemp -d /var/tmp/capsa-first-command-XXXXXX)}
root="$work/root"
[ ! -e "$root" ] || { echo "bench/first-command.sh: $root exists; give an empty WORK" >&2; exit 1; }
mirror=$(sed -n 's/^URIs: *//p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -n 1)
debootstrap --variant=minbase --include=git,ca-certificates bookworm "$root" "${mirror:-http://deb.debian.org/debian}" >"$work/debootstrap.log"
[ ! -f /etc/apt/sources.list.d/debian.sources ] || { cp /etc/apt/sources.list.d/debian.sources "$root/etc/apt/sources.list.d/"; rm -f "$root/etc/apt/sources.list"; }
cp /etc/resolv.conf "$root/etc/resolv.conf"
git clone -q "$here" "$root/root/capsa"

trap 'umount -R -l "$root" 2>/dev/null || true' EXIT
mount --bind "$root" "$root"  # a machine's / is a mount point; a chroot's directory is not
mount -t proc proc "$root/proc"
mount --rbind /sys "$root/sys" && mount --make-rslave "$root/sys"
mount --rbind /dev "$root/dev" && mount --make-rslave "$root/dev"
mount -t tmpfs tmpfs "$root/tmp"
start=$(date +%s)
chroot "$root" /usr/bin/env -i HOME=/root TERM=dumb \
  PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  sh -c 'cd /root/capsa && ./scripts/setup.sh' >"$work/setup.log" 2>&1 || {
  echo "bench/first-command.sh: setup.sh failed; see $work/setup.log" >&2
  tail -n 5 "$work/setup.log" >&2
  exit 1
}
end=$(date +%s)
echo "setup.sh in a fresh Debian 12 root on $(nproc) cores: $((end - start)) s (log: $work/setup.log)"
