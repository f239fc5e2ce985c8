#include "oci/quoted.hpp"

#include <cstdio>

namespace capsa::oci {

std::string escaped(std::string_view text) {
  constexpr std::size_t kMaxShown = 200;
  const bool cut = text.size() > kMaxShown;
  if (cut) text = text.substr(0, kMaxShown);
  std::string out;
  for (unsigned char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c < 0x20 || c == 0x7f) {
      char buf[5];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  if (cut) out += "...";
  return out;
}

}  // namespace capsa::oci
