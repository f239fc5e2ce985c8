#pragma once
// Descriptors: what a manifest or index says about another piece of content
// (image-spec descriptor.md, image-index.md).

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "oci/digest.hpp"
#include "oci/platform.hpp"

namespace capsa::oci {

struct Descriptor {
  std::string media_type;
  Digest digest;
  std::int64_t size = 0;             // bytes; blobs must be checked against it too (§B2)
  std::optional<Platform> platform;  // entries of an index only
  std::map<std::string, std::string> annotations;
  std::vector<std::string> urls;  // foreign and non-distributable layers
};

// Checks content fetched for `descriptor` (a manifest, a config): its size, then its
// digest over exactly these bytes. Throws FormatError "size mismatch: ..." or
// "digest mismatch: expected sha256:..., got sha256:...".
void verify_content(const Descriptor& descriptor, std::string_view bytes);

}  // namespace capsa::oci
