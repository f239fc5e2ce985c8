// Fuzzes the ld.so cache reader (--nv reads /etc/ld.so.cache or CAPSA_LDSO_CACHE): any
// bytes must give entries whose strings lie in the input, or capsa::FormatError.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "runtime/gpu/ldso_cache.hpp"
#include "util/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  try {
    for (const auto& entry : capsa::runtime::gpu::parse_ldso_cache(bytes))
      if (entry.name.size() >= size || entry.path.size() >= size) std::abort();
  } catch (const capsa::FormatError&) {
  }
  return 0;
}
