#include "cli/registry_options.hpp"

#include <unistd.h>

#include "cli/env_flags.hpp"
#include "util/error.hpp"

namespace capsa::cli {

void apply_registry_flags(const RegistryFlags& flags, pull::PullOptions& options) {
  if (flags.username.empty() != flags.password.empty())
    throw Error("--docker-username and --docker-password go together; give both, or neither");
  if (!flags.username.empty())
    options.credentials = registry::Credentials{flags.username, flags.password, "", "--docker-username"};
  if (!flags.authfile.empty()) {
    if (::access(flags.authfile.c_str(), R_OK) != 0) throw_errno("--authfile " + flags.authfile);
    options.authfile = flags.authfile;
  }
  options.docker_login = flags.docker_login || env_flag("DOCKER_LOGIN");
  options.nohttps = flags.nohttps || env_flag("NOHTTPS");
}

}  // namespace capsa::cli
