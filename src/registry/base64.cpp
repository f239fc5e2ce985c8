#include "registry/base64.hpp"

#include <openssl/evp.h>

namespace capsa::registry {

std::string base64_encode(const std::string& text) {
  std::string out(4 * ((text.size() + 2) / 3) + 1, '\0');
  const int length =
      EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()), reinterpret_cast<const unsigned char*>(text.data()),
                      static_cast<int>(text.size()));
  out.resize(static_cast<size_t>(length));
  return out;
}

}  // namespace capsa::registry
