#pragma once
// Base64 (RFC 4648, padded) for Basic authorization and config.json "auth" fields.
#include <string>

namespace capsa::registry {

std::string base64_encode(const std::string& text);

}  // namespace capsa::registry
