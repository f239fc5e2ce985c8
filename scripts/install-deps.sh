#!/bin/sh
# Installs what capsa needs on Debian 12, with apt-get. Idempotent and quick when
# everything is already there. Run as root.
#   install-deps.sh run    building capsa, running containers and the demo (setup.sh)
#   install-deps.sh test   all of the above plus the test suite, fuzzers, benchmarks and
#                          the tools tests compare capsa with (test.sh; the default)
set -eu
[ "$(id -u)" -eq 0 ] || { echo "install-deps.sh: run as root (it calls apt-get)" >&2; exit 1; }
set_name=${1:-test}
case "$set_name" in
  run|test) ;;
  *) echo "install-deps.sh: unknown set '$set_name' (use run or test)" >&2; exit 2 ;;
esac

# Building: lib{zstd,lz4,lzma}-dev and zlib1g-dev also give the archives linked into the
# runner (src/cli/CMakeLists.txt); libseccomp-dev: the emulated --fakeroot filter;
# libcap-dev: the capability flags (--drop-caps, --no-privs); libyaml-cpp-dev: CDI device
# specs written as YAML (--device); libgpgme-dev: OpenPGP signatures and keys (sign, verify, key);
# libtomlplusplus-dev: the administrator's execution control list (ecl.toml), and the
# cgroups TOML of --apply-cgroups (both header-only); libext2fs-dev, comerr-dev: capsa's own FUSE
# server for ext3 overlays (src/ext3); liburing-dev: its FUSE over io_uring; libdeflate-dev:
# inflating gzip images in capsa's squashfs FUSE server.
packages="
  build-essential cmake ninja-build pkg-config git
  libcli11-dev nlohmann-json3-dev libyaml-cpp-dev libssl-dev libgpgme-dev libtomlplusplus-dev
  libsquashfs-dev libdeflate-dev libzstd-dev liblz4-dev liblzma-dev zlib1g-dev
  libarchive-dev libcurl4-openssl-dev libfuse3-dev libseccomp-dev libcap-dev libext2fs-dev comerr-dev liburing-dev
"
# Running: FUSE for unprivileged containers, newuidmap/newgidmap for --fakeroot with subuid
# ranges; e2fsprogs, fuse2fs and fuse-overlayfs for ext3 overlays (--overlay, overlay
# create). The demo: gensquashfs, a static busybox, and the local registry it pulls from
# (skopeo pushes the demo image into it). gnupg: the gpg GPGME drives (sign, verify, key).
# containernetworking-plugins and iptables: the CNI networks root may give (--network bridge).
# gocryptfs: encrypted SIF images (build --encrypt, run with --passphrase/--pem-path).
packages="$packages
  gnupg fuse3 squashfuse uidmap util-linux passwd file fuse2fs fuse-overlayfs e2fsprogs gocryptfs
  squashfs-tools-ng busybox-static
  containernetworking-plugins iptables
  docker-registry skopeo openssl python3 python3-jwt python3-cryptography python3-bcrypt
"
if [ "$set_name" = test ]; then
  # The suites, the fuzzers (clang), style checks, and the reference tools tests and
  # benchmarks compare with (siftool, umoci, skopeo, Charliecloud, crun, squashfs-tools).
  packages="$packages
    clang libclang-rt-14-dev clang-format clang-tidy ccache
    libgtest-dev libgmock-dev
    squashfs-tools siftool hyperfine strace
    umoci debootstrap curl zstd python3-zstandard tar gzip bzip2 bc time
    charliecloud-builders charliecloud-runtime crun
  "
  packages="$packages snakemake cwltool"                   # workflow managers that call `singularity` (tests/workflows)
  packages="$packages zsh man-db"                          # the generated completion and man pages (tests/cli)
  packages="$packages lmod bash-completion"                # the installed modulefiles, loaded as sites do (tests/cli)
  packages="$packages openmpi-bin libopenmpi-dev"          # MPI: host mpirun, mpicc for mpi_app (tests/mpi, bench/mpi.sh)
  packages="$packages munge slurmctld slurmd slurm-client iproute2" # the private test Slurm cluster (tests/slurm; ss checks its ports)
  packages="$packages libslurm-dev"                        # <slurm/spank.h>: the SPANK plugin (src/spank, tests/spank)
  packages="$packages gridengine-master gridengine-exec gridengine-client" # the private test Grid Engine cell (tests/gridengine)
  # The portable binaries of the release tarball (cmake/CapsaPortable.cmake): the archives of
  # what libarchive, GPGME and OpenSSL use, linked statically (scripts/build-static-curl.sh
  # fetches curl's source through apt itself).
  packages="$packages libbz2-dev nettle-dev libassuan-dev libgpg-error-dev"
  packages="$packages debhelper lintian rpm"              # the packages (scripts/test-packages.sh)
  packages="$packages patchelf"                            # tests/gpu/make-kit.sh: capsa and its libraries for a GPU machine
  packages="$packages sks"                                # a real OpenPGP keyserver for the keyserver client (tests/keyserver)
fi

missing=""
for p in $packages; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -z "$missing" ]; then
  echo "install-deps: all packages present ($set_name)"
  exit 0
fi
echo "install-deps: installing$missing"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing >/dev/null
echo "install-deps: done"
