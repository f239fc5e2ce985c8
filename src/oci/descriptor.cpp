#include "oci/descriptor.hpp"

#include "util/error.hpp"

namespace capsa::oci {

void verify_content(const Descriptor& descriptor, std::string_view bytes) {
  // Size first: it is free, and a registry that pads or truncates is caught before hashing.
  if (static_cast<std::int64_t>(bytes.size()) != descriptor.size)
    throw FormatError("size mismatch: expected " + std::to_string(descriptor.size) + " bytes for " +
                      descriptor.digest.to_string() + ", got " + std::to_string(bytes.size()));
  Digest actual = Digest::compute(descriptor.digest.algorithm(), bytes);
  if (actual != descriptor.digest)
    throw FormatError("digest mismatch: expected " + descriptor.digest.to_string() + ", got " + actual.to_string());
}

}  // namespace capsa::oci
