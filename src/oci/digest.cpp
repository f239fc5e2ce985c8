#include "oci/digest.hpp"

#include <openssl/evp.h>

#include "oci/quoted.hpp"
#include "util/error.hpp"

namespace capsa::oci {
namespace {

bool is_lower_alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }
bool is_lower_hex(char c) { return (c >= 'a' && c <= 'f') || (c >= '0' && c <= '9'); }

// algorithm-component ([a-z0-9]+) joined by algorithm-separator ([+._-]).
bool is_algorithm_grammar(std::string_view a) {
  bool after_separator = true;
  for (char c : a) {
    if (is_lower_alnum(c)) {
      after_separator = false;
    } else if ((c == '+' || c == '.' || c == '_' || c == '-') && !after_separator) {
      after_separator = true;
    } else {
      return false;
    }
  }
  return !after_separator;
}

bool is_encoded_grammar(std::string_view e) {
  if (e.empty()) return false;
  for (char c : e) {
    bool ok =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '=' || c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

std::size_t hex_length_of(std::string_view algorithm) {
  if (algorithm == "sha256") return 64;
  if (algorithm == "sha512") return 128;
  return 0;
}

const EVP_MD* evp_of(std::string_view algorithm) {
  if (algorithm == "sha256") return EVP_sha256();
  if (algorithm == "sha512") return EVP_sha512();
  throw Error("unsupported digest algorithm " + quote(algorithm) + " (capsa verifies sha256 and sha512)");
}

std::string hex_of(const unsigned char* bytes, unsigned int length) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(2 * length);
  for (unsigned int i = 0; i < length; ++i) {
    hex += kHex[bytes[i] >> 4];
    hex += kHex[bytes[i] & 0xf];
  }
  return hex;
}

[[noreturn]] void throw_openssl(std::string_view algorithm) {
  throw Error("OpenSSL could not compute a " + std::string(algorithm) + " digest");
}

}  // namespace

Digest Digest::parse(std::string_view text) {
  auto fail = [&](const std::string& why) -> Digest {
    throw FormatError("invalid digest " + quote(text) + ": " + why);
  };
  auto colon = text.find(':');
  if (colon == std::string_view::npos) return fail("expected algorithm:hex, e.g. sha256:<64 hex digits>");
  std::string_view algorithm = text.substr(0, colon);
  std::string_view encoded = text.substr(colon + 1);
  if (!is_algorithm_grammar(algorithm) || !is_encoded_grammar(encoded))
    return fail("expected algorithm:hex, e.g. sha256:<64 hex digits>");
  std::size_t want = hex_length_of(algorithm);
  if (want == 0) return fail("unsupported algorithm " + quote(algorithm) + " (capsa accepts sha256 and sha512)");
  bool hex_ok = encoded.size() == want;
  for (char c : encoded) hex_ok = hex_ok && is_lower_hex(c);
  if (!hex_ok) return fail(std::string(algorithm) + " needs " + std::to_string(want) + " lower-case hex digits");
  return Digest(std::string(algorithm), std::string(encoded));
}

Digest Digest::compute(std::string_view algorithm, std::string_view bytes) {
  Hasher hasher(algorithm);
  hasher.update(bytes);
  return hasher.finish();
}

bool Digest::matches(std::string_view bytes) const { return compute(algorithm_, bytes) == *this; }

void Hasher::FreeContext::operator()(evp_md_ctx_st* ctx) const { EVP_MD_CTX_free(ctx); }

Hasher::Hasher(std::string_view algorithm) : algorithm_(algorithm), ctx_(EVP_MD_CTX_new()) {
  if (!ctx_ || EVP_DigestInit_ex(ctx_.get(), evp_of(algorithm), nullptr) != 1) throw_openssl(algorithm);
}

void Hasher::update(std::string_view bytes) {
  if (EVP_DigestUpdate(ctx_.get(), bytes.data(), bytes.size()) != 1) throw_openssl(algorithm_);
}

Digest Hasher::finish() {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (EVP_DigestFinal_ex(ctx_.get(), md, &length) != 1) throw_openssl(algorithm_);
  if (EVP_DigestInit_ex(ctx_.get(), evp_of(algorithm_), nullptr) != 1) throw_openssl(algorithm_);
  return Digest(algorithm_, hex_of(md, length));
}

}  // namespace capsa::oci
