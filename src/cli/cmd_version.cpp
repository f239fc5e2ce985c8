// `capsa version`: what was built, from which commit, with which features.
#include <openssl/opensslv.h>

#include <iostream>

#include "capsa/version.hpp"
#include "cli/commands.hpp"

namespace capsa::cli {

void add_version_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("version", "Show the version, the git commit and the enabled features");
  cmd->callback([] {
    std::cout << "capsa " << build_info::version << "\n"
              << "commit:   " << build_info::git_commit << "\n"
              << "build:    " << build_info::build_type << "\n"
              << "features: sif (read/write, SIF 01), squashfs (libsquashfs), inspect\n"
              << "libraries: " << OPENSSL_VERSION_TEXT << ", CLI11 " << CLI11_VERSION << "\n";
  });
}

}  // namespace capsa::cli
