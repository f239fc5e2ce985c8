#include "signing/digest.hpp"

#include <openssl/evp.h>
#include <unistd.h>

#include <vector>

#include "util/error.hpp"

namespace capsa::signing {
namespace {

const EVP_MD* md_for(std::string_view algorithm) {
  if (algorithm == "sha224") return EVP_sha224();
  if (algorithm == "sha256") return EVP_sha256();
  if (algorithm == "sha384") return EVP_sha384();
  if (algorithm == "sha512") return EVP_sha512();
  if (algorithm == "sha512_224") return EVP_sha512_224();
  if (algorithm == "sha512_256") return EVP_sha512_256();
  throw FormatError("unsupported digest algorithm \"" + std::string(algorithm) + "\"");
}

}  // namespace

void DigestHasher::FreeContext::operator()(evp_md_ctx_st* ctx) const { EVP_MD_CTX_free(ctx); }

DigestHasher::DigestHasher(std::string_view algorithm) : algorithm_(algorithm), ctx_(EVP_MD_CTX_new()) {
  if (!ctx_ || EVP_DigestInit_ex(ctx_.get(), md_for(algorithm), nullptr) != 1)
    throw Error("cannot start a " + algorithm_ + " digest");
}

void DigestHasher::update(std::string_view bytes) {
  if (EVP_DigestUpdate(ctx_.get(), bytes.data(), bytes.size()) != 1) throw Error("digest update failed");
}

void DigestHasher::update_from_file(int fd, std::uint64_t offset, std::uint64_t size) {
  std::vector<char> buffer(std::min<std::uint64_t>(size, 1 << 20));
  while (size > 0) {
    const std::size_t want = std::min<std::uint64_t>(size, buffer.size());
    const ssize_t got = ::pread(fd, buffer.data(), want, static_cast<off_t>(offset));
    if (got < 0) {
      if (errno == EINTR) continue;
      throw_errno("reading the image");
    }
    if (got == 0) throw FormatError("the image ends inside an object");
    update(std::string_view(buffer.data(), static_cast<std::size_t>(got)));
    offset += static_cast<std::uint64_t>(got);
    size -= static_cast<std::uint64_t>(got);
  }
}

std::string DigestHasher::finish_hex() {
  unsigned char value[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (EVP_DigestFinal_ex(ctx_.get(), value, &length) != 1) throw Error("digest failed");
  static constexpr char digits[] = "0123456789abcdef";
  std::string hex;
  for (unsigned int i = 0; i < length; ++i) {
    hex += digits[value[i] >> 4];
    hex += digits[value[i] & 15];
  }
  return hex;
}

std::string algorithm_of(sif::HashType type) {
  switch (type) {
    case sif::HashType::Sha256:
      return "sha256";
    case sif::HashType::Sha384:
      return "sha384";
    case sif::HashType::Sha512:
      return "sha512";
    default:
      throw FormatError("signature hash type " + std::string(sif::name_of(type)) + " is not supported");
  }
}

std::string hex_digest(std::string_view algorithm, std::string_view bytes) {
  DigestHasher hasher(algorithm);
  hasher.update(bytes);
  return hasher.finish_hex();
}

}  // namespace capsa::signing
