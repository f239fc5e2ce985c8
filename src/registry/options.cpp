#include "registry/options.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <exception>

#include "util/error.hpp"

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
  // How long a registry may send nothing before the transfer is retried (resuming).
  if (auto stall = env("CAPSA_REGISTRY_STALL_SECONDS"); stall && !stall->empty()) {
    try {
      options.stall_seconds = std::max(1L, std::stol(*stall));
    } catch (const std::exception&) {
      throw Error("CAPSA_REGISTRY_STALL_SECONDS=\"" + *stall + "\" is not a number of seconds");
    }
  }
  if (auto chunk = env("CAPSA_PUSH_CHUNK_BYTES"); chunk && !chunk->empty()) {
    try {
      options.upload_chunk_bytes = std::max(1ULL, std::stoull(*chunk));
    } catch (const std::exception&) {
      throw Error("CAPSA_PUSH_CHUNK_BYTES=\"" + *chunk + "\" is not a number of bytes");
    }
  }
  return options;
}

}  // namespace capsa::registry
