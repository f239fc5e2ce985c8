#include "registry/credential_store.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "registry/base64.hpp"
#include "registry/credentials.hpp"
#include "util/atomic_file.hpp"
#include "util/error.hpp"
#include "util/fd.hpp"

namespace capsa::registry {

namespace {

constexpr std::string_view kDockerHubKey = "https://index.docker.io/v1/";

nlohmann::json read_config(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return nlohmann::json::object();
  const std::string text = read_whole_file(path);
  if (text.find_first_not_of(" \t\r\n") == std::string::npos) return nlohmann::json::object();
  auto config = nlohmann::json::parse(text, nullptr, false);
  if (config.is_discarded() || !config.is_object())
    throw FormatError(path + " is not a valid JSON object; fix or remove it");
  return config;
}

void write_config(const std::string& path, const nlohmann::json& config) {
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  if (!parent.empty() && ::mkdir(parent.c_str(), 0700) != 0 && errno != EEXIST) {
    std::error_code ec;
    std::filesystem::create_directories(parent, ec);
    if (ec) throw Error("cannot create " + parent.string() + ": " + ec.message());
  }
  const std::string text = config.dump(1, '\t') + "\n";
  AtomicFile file(path, 0600);
  write_all(file.fd(), {reinterpret_cast<const std::uint8_t*>(text.data()), text.size()});
  file.commit();
}

// The "auths" keys that name the registry (a key may carry a scheme or a path).
std::vector<std::string> keys_for(const nlohmann::json& auths, std::string_view registry) {
  std::vector<std::string> keys;
  const std::string wanted = login_key(registry);
  const std::string wanted_host = normalise_config_key(wanted);
  for (const auto& [key, value] : auths.items())
    if (key == wanted || normalise_config_key(key) == wanted_host) keys.push_back(key);
  return keys;
}

}  // namespace

std::string login_config_path(const EnvLookup& env) {
  for (const char* name : {"APPTAINER_CONFIGDIR", "SINGULARITY_CONFIGDIR"})
    if (auto dir = env(name); dir && !dir->empty()) return *dir + "/docker-config.json";
  const std::string home = env("HOME").value_or("");
  if (home.empty()) throw Error("HOME is not set: cannot find ~/.apptainer/docker-config.json (use --authfile)");
  return home + "/.apptainer/docker-config.json";
}

std::string login_key(std::string_view registry) {
  std::string key(registry);
  while (!key.empty() && key.back() == '/') key.pop_back();
  if (normalise_config_key(key) == "index.docker.io") return std::string(kDockerHubKey);
  return key;
}

void store_login(const std::string& path, const std::string& registry, const std::string& username,
                 const std::string& password) {
  nlohmann::json config = read_config(path);
  if (!config.contains("auths") || !config["auths"].is_object()) config["auths"] = nlohmann::json::object();
  for (const auto& key : keys_for(config["auths"], registry)) config["auths"].erase(key);
  config["auths"][login_key(registry)] = {{"auth", base64_encode(username + ":" + password)}};
  write_config(path, config);
}

bool remove_login(const std::string& path, const std::string& registry) {
  nlohmann::json config = read_config(path);
  if (!config.contains("auths") || !config["auths"].is_object()) return false;
  const auto keys = keys_for(config["auths"], registry);
  if (keys.empty()) return false;
  for (const auto& key : keys) config["auths"].erase(key);
  write_config(path, config);
  return true;
}

std::vector<std::string> stored_logins(const std::string& path) {
  const nlohmann::json config = read_config(path);
  std::vector<std::string> keys;
  if (auto auths = config.find("auths"); auths != config.end() && auths->is_object())
    for (const auto& [key, value] : auths->items()) keys.push_back(key);
  return keys;
}

}  // namespace capsa::registry
