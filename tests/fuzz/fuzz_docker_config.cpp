// Fuzzes the parsing of ~/.docker/config.json and ~/.apptainer/docker-config.json (any
// file a user or a tool may have left there): any bytes must give credentials, a helper
// name, nothing, or capsa::FormatError; never a crash. Helpers are never run here.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "registry/credentials.hpp"
#include "util/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace registry = capsa::registry;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  for (const char* host : {"index.docker.io", "nvcr.io", "127.0.0.1:5000"}) {
    try {
      registry::DockerConfigEntry entry = registry::parse_docker_config(text, "fuzz/config.json", host);
      // Found credentials always name a user or carry a refresh token.
      if (entry.credentials && entry.credentials->username.empty() && entry.credentials->identity_token.empty())
        std::abort();
    } catch (const capsa::FormatError&) {
    }
  }
  (void)registry::normalise_config_key(text);
  return 0;
}
