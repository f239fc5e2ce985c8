#!/bin/sh
# Installs everything capsa needs to build, test and benchmark on Debian 12, with apt-get.
# Idempotent and quick when everything is already there. Run as root.
set -eu
[ "$(id -u)" -eq 0 ] || { echo "install-deps.sh: run as root (it calls apt-get)" >&2; exit 1; }

# lib{zstd,lz4,lzma}-dev, zlib1g-dev: their archives are linked into the runner (src/cli/CMakeLists.txt)
# libseccomp-dev: the emulated --fakeroot seccomp filter (build); uidmap: newuidmap/newgidmap for --fakeroot with subuid ranges
packages="
  build-essential cmake ninja-build pkg-config git
  clang libclang-rt-14-dev
  libgtest-dev libgmock-dev
  libcli11-dev nlohmann-json3-dev libssl-dev
  libsquashfs-dev squashfs-tools-ng squashfs-tools
  libzstd-dev liblz4-dev liblzma-dev zlib1g-dev
  libarchive-dev libcurl4-openssl-dev libfuse3-dev fuse3 squashfuse
  siftool hyperfine
  util-linux passwd file busybox-static
  docker-registry skopeo umoci debootstrap openssl curl zstd
  python3-jwt python3-cryptography python3-bcrypt python3-zstandard
  python3 tar gzip bc time charliecloud-builders charliecloud-runtime
  crun
  libseccomp-dev
  uidmap
"
packages="$packages openmpi-bin libopenmpi-dev"          # MPI: host mpirun, mpicc for mpi_app (tests/mpi, bench/mpi.sh)
packages="$packages munge slurmctld slurmd slurm-client iproute2" # the private test Slurm cluster (tests/slurm; ss checks its ports)

missing=""
for p in $packages; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -z "$missing" ]; then
  echo "install-deps: all packages present"
  exit 0
fi
echo "install-deps: installing$missing"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing >/dev/null
echo "install-deps: done"
