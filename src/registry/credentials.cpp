#include "registry/credentials.hpp"

#include <openssl/evp.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "registry/json_fields.hpp"
#include "util/error.hpp"

namespace capsa::registry {

namespace {

std::optional<Credentials> pair_from_env(const EnvLookup& env, const std::string& user_var,
                                         const std::string& password_var) {
  auto user = env(user_var);
  auto password = env(password_var);
  if (!user || user->empty() || !password) return std::nullopt;
  return Credentials{*user, *password, "", user_var + "/" + password_var};
}

std::string base64_decode(const std::string& text, const std::string& what) {
  std::string clean;
  for (char c : text)
    if (!std::isspace(static_cast<unsigned char>(c))) clean += c;
  if (clean.size() % 4 != 0) throw FormatError(what + ": \"auth\" is not valid base64");
  std::string out(clean.size() / 4 * 3, '\0');
  const int length = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                     reinterpret_cast<const unsigned char*>(clean.data()), static_cast<int>(clean.size()));
  if (length < 0) throw FormatError(what + ": \"auth\" is not valid base64");
  // EVP_DecodeBlock counts the padding as decoded zero bytes.
  size_t padding = 0;
  for (auto it = clean.rbegin(); it != clean.rend() && *it == '='; ++it) ++padding;
  out.resize(static_cast<size_t>(length) - std::min<size_t>(padding, 2));
  return out;
}

// One "auths" entry: "auth" is base64(user:password), split at the first ':' because
// passwords may contain colons (B8).
std::optional<Credentials> from_auth_entry(const nlohmann::json& entry, const std::string& path) {
  if (!entry.is_object()) return std::nullopt;
  Credentials credentials;
  credentials.source = path;
  if (auto it = entry.find("auth"); it != entry.end() && it->is_string() && !it->get<std::string>().empty()) {
    const std::string decoded = base64_decode(it->get<std::string>(), path);
    const auto colon = decoded.find(':');
    if (colon == std::string::npos) throw FormatError(path + ": \"auth\" does not decode to username:password");
    credentials.username = decoded.substr(0, colon);
    credentials.password = decoded.substr(colon + 1);
  } else {
    credentials.username = string_field(entry, "username");
    credentials.password = string_field(entry, "password");
  }
  credentials.identity_token = string_field(entry, "identitytoken");
  if (credentials.username.empty() && credentials.identity_token.empty()) return std::nullopt;
  return credentials;
}

// Docker's convention for the server URL given to helpers and used as the Hub's key.
std::string helper_server_url(const std::string& registry) {
  return normalise_config_key(registry) == "index.docker.io" ? "https://index.docker.io/v1/" : registry;
}

}  // namespace

std::optional<Credentials> credentials_from_environment(const EnvLookup& env) {
  for (const char* prefix : {"APPTAINER_DOCKER_", "SINGULARITY_DOCKER_", "DOCKER_"}) {
    if (auto found = pair_from_env(env, std::string(prefix) + "USERNAME", std::string(prefix) + "PASSWORD"))
      return found;
  }
  return std::nullopt;
}

std::string normalise_config_key(std::string_view key) {
  std::string host(key);
  if (auto scheme = host.find("://"); scheme != std::string::npos) host.erase(0, scheme + 3);
  if (auto slash = host.find('/'); slash != std::string::npos) host.erase(slash);
  std::transform(host.begin(), host.end(), host.begin(), [](unsigned char c) { return std::tolower(c); });
  if (host == "docker.io" || host == "registry-1.docker.io" || host == "index.docker.io") return "index.docker.io";
  return host;
}

DockerConfigEntry parse_docker_config(std::string_view text, const std::string& path, const std::string& registry) {
  const auto config = nlohmann::json::parse(text, nullptr, false);
  if (config.is_discarded() || !config.is_object()) throw FormatError(path + " is not a valid JSON object");
  const std::string wanted = normalise_config_key(registry);

  if (auto helpers = config.find("credHelpers"); helpers != config.end() && helpers->is_object()) {
    for (const auto& [key, helper] : helpers->items()) {
      if (normalise_config_key(key) == wanted && helper.is_string())
        return DockerConfigEntry{std::nullopt, helper.get<std::string>()};
    }
  }
  if (auto auths = config.find("auths"); auths != config.end() && auths->is_object()) {
    for (const auto& [key, entry] : auths->items()) {
      if (normalise_config_key(key) != wanted) continue;
      if (auto found = from_auth_entry(entry, path)) return DockerConfigEntry{std::move(found), std::nullopt};
    }
  }
  if (auto store = config.find("credsStore"); store != config.end() && store->is_string() &&
                                               !store->get<std::string>().empty())
    return DockerConfigEntry{std::nullopt, store->get<std::string>()};
  return {};
}

std::optional<Credentials> credentials_from_docker_config(const std::string& path, const std::string& registry) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::stringstream text;
  text << in.rdbuf();
  DockerConfigEntry entry = parse_docker_config(text.str(), path, registry);
  if (entry.helper) return run_credential_helper(*entry.helper, helper_server_url(registry));
  return entry.credentials;
}

std::vector<std::string> docker_config_paths(const EnvLookup& env) {
  std::vector<std::string> paths;
  const std::string home = env("HOME").value_or("");
  if (auto dir = env("APPTAINER_CONFIGDIR"); dir && !dir->empty())
    paths.push_back(*dir + "/docker-config.json");
  else if (auto legacy = env("SINGULARITY_CONFIGDIR"); legacy && !legacy->empty())
    paths.push_back(*legacy + "/docker-config.json");
  else if (!home.empty())
    paths.push_back(home + "/.apptainer/docker-config.json");
  if (auto dir = env("DOCKER_CONFIG"); dir && !dir->empty())
    paths.push_back(*dir + "/config.json");
  else if (!home.empty())
    paths.push_back(home + "/.docker/config.json");
  return paths;
}

std::optional<Credentials> find_credentials(const std::string& registry, const EnvLookup& env) {
  if (auto found = credentials_from_environment(env)) return found;
  for (const auto& path : docker_config_paths(env)) {
    if (auto found = credentials_from_docker_config(path, registry)) return found;
  }
  return std::nullopt;
}

}  // namespace capsa::registry
