// Fuzzes the CDI spec reader (--device reads /etc/cdi, /var/run/cdi or --cdi-dirs): any
// bytes, read as JSON when the first byte is even and as YAML when it is odd, must give a
// validated spec or capsa::FormatError.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "runtime/gpu/cdi_spec.hpp"
#include "util/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  using capsa::runtime::gpu::CdiFormat;
  const CdiFormat format = data[0] % 2 == 0 ? CdiFormat::Json : CdiFormat::Yaml;
  std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  try {
    auto spec = capsa::runtime::gpu::parse_cdi_spec(text, "fuzz", format);
    if (spec.devices.empty() || spec.kind.find('/') == std::string::npos) std::abort();
    for (const auto& device : spec.devices)
      if (device.edits.empty()) std::abort();
  } catch (const capsa::FormatError&) {
  }
  return 0;
}
