#pragma once
// Content digests "algorithm:encoded" (OCI image-spec descriptor.md). capsa accepts the registered
// algorithms it can verify, sha256 and sha512, and rejects anything else: a digest it
// cannot check would defeat content addressing.

#include <memory>
#include <string>
#include <string_view>

struct evp_md_ctx_st;

namespace capsa::oci {

class Digest {
 public:
  // Throws FormatError `invalid digest "<text>": <why>`.
  static Digest parse(std::string_view text);
  // The digest of `bytes` (exactly these bytes; never re-serialised JSON, see sarus #32).
  static Digest compute(std::string_view algorithm, std::string_view bytes);
  static Digest sha256_of(std::string_view bytes) { return compute("sha256", bytes); }

  const std::string& algorithm() const { return algorithm_; }
  const std::string& hex() const { return hex_; }
  std::string to_string() const { return algorithm_ + ":" + hex_; }
  // Whether `bytes` hash to this digest, with this digest's algorithm.
  bool matches(std::string_view bytes) const;

  friend bool operator==(const Digest&, const Digest&) = default;
  friend auto operator<=>(const Digest&, const Digest&) = default;

 private:
  friend class Hasher;
  Digest(std::string algorithm, std::string hex) : algorithm_(std::move(algorithm)), hex_(std::move(hex)) {}
  std::string algorithm_;
  std::string hex_;
};

// Digest of a stream fed in pieces: a blob while it downloads, a layer's uncompressed
// tar (its diff_id) while it is decompressed. Throws Error for an algorithm other than
// sha256 and sha512.
class Hasher {
 public:
  explicit Hasher(std::string_view algorithm = "sha256");
  void update(std::string_view bytes);
  // The digest of everything fed so far; the hasher then starts again from nothing.
  Digest finish();

 private:
  struct FreeContext {
    void operator()(evp_md_ctx_st* ctx) const;
  };
  std::string algorithm_;
  std::unique_ptr<evp_md_ctx_st, FreeContext> ctx_;
};

}  // namespace capsa::oci
