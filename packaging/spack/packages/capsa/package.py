# Spack package for capsa. A site adds this repository (`spack repo add packaging/spack`)
# or copies this file into its own, then `spack install capsa`; or builds a checkout in
# place with `spack dev-build capsa@main` from the checkout's root.
from spack.package import *


class Capsa(CMakePackage):
    """A container runtime for HPC and GPU clusters that runs Singularity/Apptainer SIF
    images with the same commands, flags and environment variables, unprivileged and
    without setuid."""

    homepage = "https://capsa.invalid"  # no public home yet: sites point `git` at their mirror
    git = "https://capsa.invalid/capsa.git"

    maintainers("capsa-maintainers")

    version("main", branch="main")

    variant("static_runner", default=False,
            description="Link the runner's libraries statically (needs their .a archives)")

    depends_on("cmake@3.25:", type="build")
    depends_on("pkgconfig", type="build")
    depends_on("nlohmann-json@3.10:", type="build")
    depends_on("cli11@2.1:", type="build")
    depends_on("openssl@3:")
    depends_on("yaml-cpp@0.7:")
    depends_on("libseccomp")
    depends_on("libcap")
    depends_on("libarchive@3.6:")
    depends_on("curl@7.88:")
    depends_on("gpgme")
    depends_on("libfuse@3:")
    depends_on("zstd")
    depends_on("libdeflate")
    depends_on("liburing")
    depends_on("e2fsprogs")  # libext2fs, libe2p, libcom_err: the ext3 overlays' FUSE server
    # libsquashfs (squashfs-tools-ng) has no Spack package: configure finds the system's
    # through pkg-config (Debian: libsquashfs-dev; RHEL: squashfs-tools-ng-devel from EPEL).

    def cmake_args(self):
        return [
            self.define("CAPSA_BUILD_TESTS", False),
            self.define_from_variant("CAPSA_STATIC_RUNNER", "static_runner"),
        ]
