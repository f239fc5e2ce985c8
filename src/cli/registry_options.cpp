#include "cli/registry_options.hpp"

#include <unistd.h>

#include "cli/env_flags.hpp"
#include "util/error.hpp"

namespace capsa::cli {

pull::RegistryAccess registry_access(const RegistryFlags& flags) {
  pull::RegistryAccess access;
  if (flags.username.empty() != flags.password.empty())
    throw Error("--docker-username and --docker-password go together; give both, or neither");
  if (!flags.username.empty())
    access.credentials = registry::Credentials{flags.username, flags.password, "", "--docker-username"};
  if (!flags.authfile.empty()) {
    if (::access(flags.authfile.c_str(), R_OK) != 0) throw_errno("--authfile " + flags.authfile);
    access.authfile = flags.authfile;
  }
  access.docker_login = flags.docker_login || env_flag("DOCKER_LOGIN");
  access.nohttps = flags.nohttps || env_flag("NOHTTPS");
  return access;
}

}  // namespace capsa::cli
