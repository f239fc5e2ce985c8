// Fuzzes what the registry client parses from a registry's answer headers: challenges
// (WWW-Authenticate), Content-Range and digests. Any input must parse or be rejected with
// capsa::Error, never crash or hang.
#include <cstdint>
#include <string_view>

#include "registry/challenge.hpp"
#include "oci/digest.hpp"
#include "registry/http.hpp"
#include "util/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  for (const auto& challenge : capsa::registry::parse_challenges(text)) (void)challenge.param("realm");
  if (auto range = capsa::registry::parse_content_range(text); range && range->last < range->first) __builtin_trap();
  try {
    (void)capsa::oci::Digest::parse(text);
  } catch (const capsa::Error&) {
  }
  return 0;
}
