#include "sif/uuid.hpp"

#include <openssl/rand.h>

#include "util/error.hpp"

namespace capsa::sif {

Uuid random_uuid() {
  Uuid id{};
  if (RAND_bytes(id.data(), static_cast<int>(id.size())) != 1) throw Error("cannot generate a random UUID");
  id[6] = static_cast<std::uint8_t>((id[6] & 0x0F) | 0x40);  // version 4
  id[8] = static_cast<std::uint8_t>((id[8] & 0x3F) | 0x80);  // RFC 4122 variant
  return id;
}

Uuid parse_uuid(const std::string& text) {
  auto hex_value = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  Uuid id{};
  std::size_t byte = 0;
  bool valid = text.size() == 36;
  for (std::size_t i = 0; valid && i < text.size();) {
    if (i == 8 || i == 13 || i == 18 || i == 23) {
      valid = text[i] == '-';
      ++i;
      continue;
    }
    int hi = hex_value(text[i]), lo = i + 1 < text.size() ? hex_value(text[i + 1]) : -1;
    valid = hi >= 0 && lo >= 0 && byte < id.size();
    if (valid) id[byte++] = static_cast<std::uint8_t>(hi << 4 | lo);
    i += 2;
  }
  if (!valid || byte != id.size()) throw FormatError("invalid UUID \"" + text + "\" (expected xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx)");
  return id;
}

}  // namespace capsa::sif
