#include "signing/base64.hpp"

#include <openssl/evp.h>

#include <cctype>

namespace capsa::signing {

std::string base64_encode(std::string_view bytes, bool padded) {
  std::string out(4 * ((bytes.size() + 2) / 3) + 1, '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(bytes.data()), static_cast<int>(bytes.size()));
  out.resize(static_cast<std::size_t>(n));
  if (!padded)
    while (!out.empty() && out.back() == '=') out.pop_back();
  return out;
}

std::optional<std::string> base64_decode(std::string_view text) {
  std::string padded(text);
  while (padded.size() % 4 != 0) padded += '=';
  for (char c : padded)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '+' || c == '/' || c == '=')) return std::nullopt;
  std::string out(padded.size() / 4 * 3 + 1, '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(padded.data()), static_cast<int>(padded.size()));
  if (n < 0) return std::nullopt;
  std::size_t length = static_cast<std::size_t>(n);
  // EVP_DecodeBlock counts the padding as zero bytes; take them off again.
  for (std::size_t i = padded.size(); i > 0 && padded[i - 1] == '='; --i) --length;
  out.resize(length);
  return out;
}

}  // namespace capsa::signing
