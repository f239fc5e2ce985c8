#pragma once
// Digests as the SIF integrity metadata writes them ("sha256:<hex>"), over bytes in
// memory or ranges of an image file (objects may be gigabytes: they are streamed).
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "sif/format.hpp"

struct evp_md_ctx_st;

namespace capsa::signing {

// The names the reference implementation writes before the colon: sha224, sha256,
// sha384, sha512, sha512_224, sha512_256. Throws FormatError for anything else.
class DigestHasher {
 public:
  explicit DigestHasher(std::string_view algorithm);
  void update(std::string_view bytes);
  // Streams `size` bytes of `fd` from `offset` into the digest.
  void update_from_file(int fd, std::uint64_t offset, std::uint64_t size);
  std::string finish_hex();
  const std::string& algorithm() const { return algorithm_; }

 private:
  struct FreeContext {
    void operator()(evp_md_ctx_st* ctx) const;
  };
  std::string algorithm_;
  std::unique_ptr<evp_md_ctx_st, FreeContext> ctx_;
};

// The digest algorithm name for a SIF signature descriptor's hash type (SHA256 ->
// "sha256"); throws FormatError for the BLAKE2 types, which no signer writes.
std::string algorithm_of(sif::HashType type);

std::string hex_digest(std::string_view algorithm, std::string_view bytes);

}  // namespace capsa::signing
