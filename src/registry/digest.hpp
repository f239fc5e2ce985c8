#pragma once
// Content digests ("sha256:<64 hex>", "sha512:<128 hex>") computed incrementally with
// OpenSSL EVP, so a blob is hashed as it streams to disk.

#include <openssl/evp.h>

#include <memory>
#include <span>
#include <string>
#include <string_view>

namespace capsa::registry {

struct ParsedDigest {
  std::string algorithm;  // "sha256" or "sha512"
  std::string hex;        // lower-case
};

// Throws FormatError for anything but a well-formed sha256/sha512 digest.
ParsedDigest parse_digest(std::string_view digest);
bool looks_like_digest(std::string_view reference);

class Hasher {
 public:
  explicit Hasher(std::string_view algorithm = "sha256");
  void update(std::span<const char> data);
  void update(std::string_view data) { update(std::span<const char>(data.data(), data.size())); }
  // "algorithm:hex"; the hasher is consumed.
  std::string finish();
  // Hashes the first `length` bytes of the file at fd (for resuming a partial download).
  void update_from_file(int fd, unsigned long long length);

 private:
  struct CtxDeleter {
    void operator()(EVP_MD_CTX* ctx) const { EVP_MD_CTX_free(ctx); }
  };
  std::string algorithm_;
  std::unique_ptr<EVP_MD_CTX, CtxDeleter> ctx_;
};

std::string digest_of(std::string_view algorithm, std::string_view data);

}  // namespace capsa::registry
