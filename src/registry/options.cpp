#include "registry/options.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>

namespace capsa::registry {

std::optional<std::string> process_env(const std::string& name) {
  const char* value = std::getenv(name.c_str());
  if (value == nullptr) return std::nullopt;
  return std::string(value);
}

namespace {
bool truthy(std::string value) {
  std::transform(value.begin(), value.end(), value.begin(), [](unsigned char c) { return std::tolower(c); });
  return value == "1" || value == "true" || value == "yes" || value == "on";
}
}  // namespace

bool nohttps_from_environment(const EnvLookup& env) {
  for (const char* name : {"APPTAINER_NOHTTPS", "SINGULARITY_NOHTTPS"}) {
    if (auto value = env(name); value && truthy(*value)) return true;
  }
  return false;
}

ClientOptions options_from_environment(const EnvLookup& env) {
  ClientOptions options;
  options.insecure_http = nohttps_from_environment(env);
  if (auto ca = env("CAPSA_REGISTRY_CA"); ca && !ca->empty()) options.ca_file = *ca;
  return options;
}

}  // namespace capsa::registry
