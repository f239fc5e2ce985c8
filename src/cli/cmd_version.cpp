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
    "pull: docker:// from OCI/Docker registries (token, basic, credential helpers), verified, cached; oras:// SIFs",
    "push: oras:// (Apptainer's artifact format), chunked and resumable; registry login/logout/list",
    "run: exec/run/shell/test, root (kernel squashfs, shared loop devices) and unprivileged (own FUSE server)",
    "build: definition files (docker, debootstrap, localimage, scratch), --fakeroot, --sandbox",
    "gpu: --nv (nvliblist.conf), --nvccli, --rocm (rocmliblist.conf), --device (CDI)",
    "mpi: one container per rank under srun (PMIx, PMI2) and mpirun",
    "cache: shared, content-addressed, locked (capsa cache list/clean)",
};

bool called_as_apptainer(const std::string& program_name) {
  return program_name == "singularity" || program_name == "apptainer";
}

}  // namespace

std::string version_line(const std::string& program_name) {
  // Apptainer's template (apptainer.go): "<package name> version <version>", with the
  // package name "apptainer" also when it is called as singularity.
  if (called_as_apptainer(program_name)) return std::string("apptainer version ") + build_info::apptainer_release;
  return std::string("capsa version ") + build_info::version + " (Apptainer " + build_info::apptainer_release +
         " command line)";
}

void add_version_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("version", "Show the version, the git commit and the enabled features");
  cmd->callback([&app] {
    // `apptainer version` prints the bare version number; scripts cut it apart.
    if (called_as_apptainer(app.get_name())) {
      std::cout << build_info::apptainer_release << "\n";
      return;
    }
    std::cout << "capsa " << build_info::version << "\n"
              << "command line: Apptainer " << build_info::apptainer_release << "\n"
              << "commit:   " << build_info::git_commit << "\n"
              << "build:    " << build_info::build_type << "\n"
              << "features:\n";
    for (const char* feature : kFeatures) std::cout << "  " << feature << "\n";
    std::cout << "libraries: " << OPENSSL_VERSION_TEXT << ", CLI11 " << CLI11_VERSION << "\n";
  });
}

}  // namespace capsa::cli
