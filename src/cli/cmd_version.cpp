// `capsa version`: what was built, from which commit, with which features.
#include <openssl/opensslv.h>

#include <iostream>

#include "capsa/version.hpp"
#include "cli/commands.hpp"

namespace capsa::cli {
namespace {

// What this build can do, one line each, as a bug report needs it. Keep in step with the
// commands: tests/cli/cli_test.cpp checks that each feature's command exists.
constexpr const char* kFeatures[] = {
    "sif: read/write SIF 01 (capsa sif: siftool's commands), inspect",
    "pull: docker:// from OCI/Docker registries (token, basic, credential helpers), verified, cached",
    "run: exec/run/shell/test, root (kernel squashfs, shared loop devices) and unprivileged (own FUSE server)",
    "build: definition files (docker, debootstrap, localimage, scratch), --fakeroot, --sandbox",
    "gpu: --nv (nvliblist.conf), --nvccli",
    "mpi: one container per rank under srun (PMIx, PMI2) and mpirun",
    "cache: shared, content-addressed, locked (capsa cache list/clean)",
};

}  // namespace

void add_version_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("version", "Show the version, the git commit and the enabled features");
  cmd->callback([] {
    std::cout << "capsa " << build_info::version << "\n"
              << "commit:   " << build_info::git_commit << "\n"
              << "build:    " << build_info::build_type << "\n"
              << "features:\n";
    for (const char* feature : kFeatures) std::cout << "  " << feature << "\n";
    std::cout << "libraries: " << OPENSSL_VERSION_TEXT << ", CLI11 " << CLI11_VERSION << "\n";
  });
}

}  // namespace capsa::cli
