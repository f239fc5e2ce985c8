#include "registry/digest.hpp"

#include <unistd.h>

#include <algorithm>
#include <vector>

#include "util/error.hpp"

namespace capsa::registry {

namespace {
size_t hex_length(std::string_view algorithm) {
  if (algorithm == "sha256") return 64;
  if (algorithm == "sha512") return 128;
  return 0;
}
}  // namespace

ParsedDigest parse_digest(std::string_view digest) {
  auto colon = digest.find(':');
  if (colon == std::string_view::npos) throw FormatError("not a digest (algorithm:hex): " + std::string(digest));
  ParsedDigest parsed{std::string(digest.substr(0, colon)), std::string(digest.substr(colon + 1))};
  const size_t expected = hex_length(parsed.algorithm);
  if (expected == 0)
    throw FormatError("unsupported digest algorithm '" + parsed.algorithm + "' (sha256 and sha512 are supported)");
  const bool hex = std::all_of(parsed.hex.begin(), parsed.hex.end(),
                               [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
  if (parsed.hex.size() != expected || !hex) throw FormatError("malformed " + parsed.algorithm + " digest: " + std::string(digest));
  return parsed;
}

bool looks_like_digest(std::string_view reference) { return reference.find(':') != std::string_view::npos; }

Hasher::Hasher(std::string_view algorithm) : algorithm_(algorithm), ctx_(EVP_MD_CTX_new()) {
  const EVP_MD* md = algorithm_ == "sha512" ? EVP_sha512() : algorithm_ == "sha256" ? EVP_sha256() : nullptr;
  if (md == nullptr) throw FormatError("unsupported digest algorithm '" + algorithm_ + "'");
  if (!ctx_ || EVP_DigestInit_ex(ctx_.get(), md, nullptr) != 1) throw Error("OpenSSL digest initialisation failed");
}

void Hasher::update(std::span<const char> data) {
  if (EVP_DigestUpdate(ctx_.get(), data.data(), data.size()) != 1) throw Error("OpenSSL digest update failed");
}

std::string Hasher::finish() {
  unsigned char raw[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (EVP_DigestFinal_ex(ctx_.get(), raw, &length) != 1) throw Error("OpenSSL digest final failed");
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = algorithm_ + ":";
  for (unsigned i = 0; i < length; ++i) {
    out += kHex[raw[i] >> 4];
    out += kHex[raw[i] & 15];
  }
  return out;
}

void Hasher::update_from_file(int fd, unsigned long long length) {
  std::vector<char> buffer(1 << 20);
  unsigned long long offset = 0;
  while (offset < length) {
    const size_t want = static_cast<size_t>(std::min<unsigned long long>(buffer.size(), length - offset));
    const ssize_t got = ::pread(fd, buffer.data(), want, static_cast<off_t>(offset));
    if (got < 0) throw_errno("reading a partial download to resume it");
    if (got == 0) throw Error("partial download shrank while resuming it");
    update(std::span<const char>(buffer.data(), static_cast<size_t>(got)));
    offset += static_cast<unsigned long long>(got);
  }
}

std::string digest_of(std::string_view algorithm, std::string_view data) {
  Hasher hasher(algorithm);
  hasher.update(data);
  return hasher.finish();
}

}  // namespace capsa::registry
