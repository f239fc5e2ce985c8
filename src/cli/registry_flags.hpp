#pragma once
// The registry flags Apptainer takes on pull and on exec/run/shell/test of a docker://
// image: --docker-username/--docker-password, --docker-login, --authfile, --nohttps.
#include <CLI/CLI.hpp>
#include <string>

namespace capsa::cli {

struct RegistryFlags {
  std::string username;
  std::string password;
  bool docker_login = false;
  std::string authfile;
  bool nohttps = false;
};

void add_registry_flags(CLI::App& command, RegistryFlags& flags);

}  // namespace capsa::cli
