// Fuzzes docker:// reference parsing and everything derived from a parsed reference:
// any text must either be refused with capsa::FormatError or give a reference whose
// canonical form parses back to itself.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "oci/platform.hpp"
#include "reference/image_reference.hpp"
#include "util/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    auto ref = capsa::reference::parse_image_reference(text);
    (void)ref.api_host();
    (void)ref.credentials_keys();
    (void)ref.manifest_reference();
    (void)ref.default_sif_name();
    if (capsa::reference::parse_image_reference(ref.to_string()).to_string() != ref.to_string()) std::abort();
  } catch (const capsa::FormatError&) {
  }
  try {
    (void)capsa::oci::parse_platform(text);
  } catch (const capsa::FormatError&) {
  }
  return 0;
}
