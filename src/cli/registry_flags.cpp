#include "cli/registry_flags.hpp"

namespace capsa::cli {

void add_registry_flags(CLI::App& command, RegistryFlags& flags) {
  command.add_option("--docker-username", flags.username,
                     "Registry user name (also APPTAINER_DOCKER_USERNAME); needs --docker-password");
  command.add_option("--docker-password", flags.password,
                     "Registry password or token (also APPTAINER_DOCKER_PASSWORD, which keeps it out of the process "
                     "list)");
  command.add_flag("--docker-login", flags.docker_login, "Ask for registry credentials on the terminal");
  command.add_option("--authfile", flags.authfile,
                     "Docker-style config.json to take registry credentials from, before ~/.docker/config.json");
  command.add_flag("--nohttps,--no-https", flags.nohttps, "Talk plain HTTP to the registry (APPTAINER_NOHTTPS)");
}

}  // namespace capsa::cli
