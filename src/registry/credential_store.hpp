#pragma once
// Where `registry login` keeps credentials, as Apptainer does (internal/pkg/util/ociauth,
// docker/cli's configfile format): an "auths" entry {"auth": base64(user:password)} in
// $APPTAINER_CONFIGDIR/docker-config.json (default ~/.apptainer/docker-config.json), mode
// 0600, or in the file --authfile names. find_credentials() reads that file before
// ~/.docker/config.json, so a login serves pull, exec and push alike.
//
// Apptainer 1.4 writes ~/.docker/config.json instead when ~/.apptainer/docker-config.json
// does not exist yet (syfs.SearchDockerConf); capsa always writes its own file and never
// edits Docker's, whose credsStore would otherwise send the password to a helper.

#include <string>
#include <string_view>
#include <vector>

#include "registry/options.hpp"

namespace capsa::registry {

// The file a login is written to when no --authfile is given.
std::string login_config_path(const EnvLookup& env = process_env);

// The "auths" key of a registry: "https://index.docker.io/v1/" for Docker Hub (docker.io,
// index.docker.io, registry-1.docker.io), else host[:port][/path] as given.
std::string login_key(std::string_view registry);

// Adds or replaces the registry's entry, keeping everything else in the file. The file is
// replaced atomically and has mode 0600; its directory is created (0700) if missing.
void store_login(const std::string& path, const std::string& registry, const std::string& username,
                 const std::string& password);

// Removes every entry for the registry. False when there was none.
bool remove_login(const std::string& path, const std::string& registry);

// The registries the file holds credentials for, as keyed there.
std::vector<std::string> stored_logins(const std::string& path);

}  // namespace capsa::registry
