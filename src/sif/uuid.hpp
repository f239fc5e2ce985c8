#pragma once
#include <array>
#include <cstdint>
#include <string>

namespace capsa::sif {

using Uuid = std::array<std::uint8_t, 16>;

// A random (version 4) UUID from OpenSSL's CSPRNG.
Uuid random_uuid();
// Parses the canonical 8-4-4-4-12 form; throws FormatError otherwise.
Uuid parse_uuid(const std::string& text);

}  // namespace capsa::sif
