#pragma once
// Where registry credentials come from, in Apptainer's order of precedence:
//   1. --docker-login (prompt_for_credentials, by the caller);
//   2. APPTAINER_DOCKER_USERNAME/_PASSWORD, then SINGULARITY_DOCKER_USERNAME/_PASSWORD,
//      then DOCKER_USERNAME/DOCKER_PASSWORD;
//   3. $APPTAINER_CONFIGDIR/docker-config.json (default ~/.apptainer/docker-config.json), then
//      $DOCKER_CONFIG/config.json (default ~/.docker/config.json): "credHelpers" for the
//      registry, else "auths" for it, else the "credsStore" helper.
// A Credentials value never appears in an error message or log line; only the names of
// the variables or files it came from do.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "registry/options.hpp"

namespace capsa::registry {

// The variables above that hold a secret. capsa hides their values from /proc/PID/environ
// as it starts (util/environment_block.hpp); they stay readable to capsa itself.
inline constexpr const char* kSecretEnvironmentVariables[] = {
    "APPTAINER_DOCKER_PASSWORD", "SINGULARITY_DOCKER_PASSWORD", "DOCKER_PASSWORD", "APPTAINER_LOGIN_PASSWORD",
    "SINGULARITY_LOGIN_PASSWORD",  // these two: `registry login`
    // An encrypted image's key (docs/encryption.md).
    "APPTAINER_ENCRYPTION_PASSPHRASE", "SINGULARITY_ENCRYPTION_PASSPHRASE", "APPTAINER_ENCRYPTION_PEM_DATA",
    "SINGULARITY_ENCRYPTION_PEM_DATA"};

struct Credentials {
  std::string username;
  std::string password;
  // An OAuth2 refresh token ("identitytoken", or a helper's "<token>" user), exchanged
  // at the token endpoint with grant_type=refresh_token.
  std::string identity_token;
  // Where they came from, for error messages ("APPTAINER_DOCKER_USERNAME", a file path).
  std::string source;
};

std::optional<Credentials> credentials_from_environment(const EnvLookup& env = process_env);

// Registry host as config.json keys it: Docker Hub aliases become index.docker.io;
// "https://" and any path are dropped.
std::string normalise_config_key(std::string_view key);

// What one config.json holds for a registry: credentials from "auths", or the name of
// the credential helper to ask ("credHelpers" for it, else "credsStore"), or neither.
struct DockerConfigEntry {
  std::optional<Credentials> credentials;
  std::optional<std::string> helper;
};

// Parses the text of a config.json (read from `path`, which names it in errors) and looks
// `registry` up in it; runs nothing. FormatError when it is not a JSON object or an
// "auth" is not base64 of username:password.
DockerConfigEntry parse_docker_config(std::string_view text, const std::string& path, const std::string& registry);

// Looks `registry` (host[:port]) up in one config.json. nullopt when the file does not
// exist or has nothing for the registry; FormatError when it is not valid JSON.
std::optional<Credentials> credentials_from_docker_config(const std::string& path, const std::string& registry);

// Runs docker-credential-<helper> get, the server URL on its stdin. nullopt when the
// helper has no credentials for it; Error when it cannot run or answers garbage.
std::optional<Credentials> run_credential_helper(const std::string& helper, const std::string& server_url);

// The docker-config files searched, in order (see above).
std::vector<std::string> docker_config_paths(const EnvLookup& env = process_env);

// Environment first, then the config files.
std::optional<Credentials> find_credentials(const std::string& registry, const EnvLookup& env = process_env);

// --docker-login: asks for username and password on the terminal, the password without
// echo. in_fd/out_fd are the terminal (tests pass a pseudo-terminal); echo is restored
// whatever happens.
Credentials prompt_for_credentials(int in_fd, int out_fd, const std::string& registry);
// The same on /dev/tty.
Credentials prompt_for_credentials_on_tty(const std::string& registry);
// `registry login` without a password: asks on /dev/tty without echo.
std::string prompt_for_password_on_tty(const std::string& prompt);

}  // namespace capsa::registry
