#pragma once
// Base64 (RFC 4648, standard alphabet) through OpenSSL, for DSSE envelopes.
#include <optional>
#include <string>
#include <string_view>

namespace capsa::signing {

std::string base64_encode(std::string_view bytes, bool padded = true);
// nullopt for text that is not base64 (padded or not).
std::optional<std::string> base64_decode(std::string_view text);

}  // namespace capsa::signing
