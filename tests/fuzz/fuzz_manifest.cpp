// Fuzzes what capsa reads from a registry: indexes, manifests, image configs, and the
// platform choice over a parsed index. Any bytes must either be refused with
// capsa::FormatError or parse; never crash, leak or hang.
#include <cstdint>
#include <string_view>

#include "oci/image_config.hpp"
#include "oci/manifest.hpp"
#include "oci/media_types.hpp"
#include "oci/select.hpp"
#include "util/error.hpp"

namespace {

template <typename Body>
void refused_or_parsed(Body&& body) {
  try {
    body();
  } catch (const capsa::FormatError&) {
    // Rejected cleanly: the expected outcome for most inputs.
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace oci = capsa::oci;
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  refused_or_parsed([&] { (void)oci::kind_of("application/json", bytes); });
  refused_or_parsed([&] {
    oci::Index index = oci::parse_index(bytes, "application/json");
    for (const char* platform : {"linux/amd64", "linux/arm64", "linux/arm/v6"})
      refused_or_parsed([&] { (void)oci::select_manifest(index, oci::parse_platform(platform), "docker://fuzz"); });
  });
  refused_or_parsed([&] {
    oci::Manifest manifest = oci::parse_manifest(bytes, "");
    refused_or_parsed([&] { oci::check_layers_match(manifest, oci::parse_image_config(bytes)); });
  });
  refused_or_parsed([&] {
    oci::ImageConfig config = oci::parse_image_config(bytes);
    (void)config.config.dump();
    (void)oci::platform_mismatch_warning(config, oci::parse_platform("linux/amd64"));
  });
  return 0;
}
