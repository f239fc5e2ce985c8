#include "signing/pem_key.hpp"

#include <openssl/bio.h>
#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

#include "signing/base64.hpp"
#include "util/error.hpp"

namespace capsa::signing {
namespace {

using Bio = std::unique_ptr<BIO, decltype(&BIO_free)>;
using MdCtx = std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)>;

std::string read_key_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path + ": cannot read the key file: " + std::strerror(errno));
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

KeyHandle own(EVP_PKEY* key) { return KeyHandle(key, FreeKey{}); }

// The digest sigstore's signers use: SHA-256 for RSA and ECDSA, none (pure) for Ed25519.
const EVP_MD* digest_for(EVP_PKEY* key) { return EVP_PKEY_get_id(key) == EVP_PKEY_ED25519 ? nullptr : EVP_sha256(); }

void check_supported(EVP_PKEY* key, const std::string& what) {
  const int id = EVP_PKEY_get_id(key);
  if (id != EVP_PKEY_RSA && id != EVP_PKEY_EC && id != EVP_PKEY_ED25519)
    throw Error(what + ": unsupported key type (capsa signs with RSA, ECDSA and Ed25519 keys)");
}

// SSH wire-format pieces (RFC 4251 string and mpint), for the key fingerprint only.
void put_string(std::string& out, std::string_view bytes) {
  const auto n = static_cast<std::uint32_t>(bytes.size());
  for (int shift = 24; shift >= 0; shift -= 8) out += static_cast<char>((n >> shift) & 0xFF);
  out.append(bytes);
}

std::string bignum_param(EVP_PKEY* key, const char* name) {
  BIGNUM* bn = nullptr;
  if (EVP_PKEY_get_bn_param(key, name, &bn) != 1) throw Error("cannot read the RSA key");
  std::string bytes(static_cast<std::size_t>(BN_num_bytes(bn)), '\0');
  BN_bn2bin(bn, reinterpret_cast<unsigned char*>(bytes.data()));
  BN_free(bn);
  // mpint: a positive number whose top bit is set gets a leading zero byte.
  if (!bytes.empty() && (static_cast<unsigned char>(bytes[0]) & 0x80) != 0) bytes.insert(bytes.begin(), '\0');
  return bytes;
}

}  // namespace

void FreeKey::operator()(evp_pkey_st* key) const { EVP_PKEY_free(key); }

PublicKey PublicKey::load_pem_file(const std::string& path) { return load_pem(read_key_file(path), path); }

PublicKey PublicKey::load_pem(std::string_view pem, const std::string& what) {
  Bio bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())), BIO_free);
  EVP_PKEY* key = PEM_read_bio_PUBKEY(bio.get(), nullptr, nullptr, nullptr);
  ERR_clear_error();
  if (key == nullptr)
    throw Error(what + ": not a PEM public key (give the public half of an RSA, ECDSA or Ed25519 key pair)");
  KeyHandle handle = own(key);
  check_supported(key, what);
  return PublicKey(handle);
}

PublicKey PublicKey::from_key(KeyHandle key, const std::string& what) {
  check_supported(key.get(), what);
  return PublicKey(std::move(key));
}

bool PublicKey::verify(std::string_view message, std::string_view signature) const {
  MdCtx ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  if (!ctx || EVP_DigestVerifyInit(ctx.get(), nullptr, digest_for(key_.get()), nullptr, key_.get()) != 1) {
    ERR_clear_error();
    return false;
  }
  const int ok = EVP_DigestVerify(ctx.get(), reinterpret_cast<const unsigned char*>(signature.data()), signature.size(),
                                  reinterpret_cast<const unsigned char*>(message.data()), message.size());
  ERR_clear_error();
  return ok == 1;
}

std::string PublicKey::type_name() const {
  switch (EVP_PKEY_get_id(key_.get())) {
    case EVP_PKEY_RSA:
      return "RSA";
    case EVP_PKEY_EC:
      return "ECDSA";
    default:
      return "ED25519";
  }
}

std::string PublicKey::ssh_fingerprint() const {
  // Written by hand: OpenSSL has no SSH public-key encoding, and this fingerprint is only
  // the label the reference implementation puts in an envelope's "keyid".
  EVP_PKEY* key = key_.get();
  std::string blob;
  switch (EVP_PKEY_get_id(key)) {
    case EVP_PKEY_RSA:
      put_string(blob, "ssh-rsa");
      put_string(blob, bignum_param(key, OSSL_PKEY_PARAM_RSA_E));
      put_string(blob, bignum_param(key, OSSL_PKEY_PARAM_RSA_N));
      break;
    case EVP_PKEY_ED25519: {
      std::string raw(32, '\0');
      std::size_t length = raw.size();
      EVP_PKEY_get_raw_public_key(key, reinterpret_cast<unsigned char*>(raw.data()), &length);
      put_string(blob, "ssh-ed25519");
      put_string(blob, raw.substr(0, length));
      break;
    }
    default: {
      char group[64] = {};
      EVP_PKEY_get_utf8_string_param(key, OSSL_PKEY_PARAM_GROUP_NAME, group, sizeof group, nullptr);
      const std::string name = group;
      std::string curve = name == "prime256v1"  ? "nistp256"
                          : name == "secp384r1" ? "nistp384"
                          : name == "secp521r1" ? "nistp521"
                                                : name;
      std::string point(200, '\0');
      std::size_t length = 0;
      EVP_PKEY_get_octet_string_param(key, OSSL_PKEY_PARAM_ENCODED_PUBLIC_KEY,
                                      reinterpret_cast<unsigned char*>(point.data()), point.size(), &length);
      put_string(blob, "ecdsa-sha2-" + curve);
      put_string(blob, curve);
      put_string(blob, point.substr(0, length));
      break;
    }
  }
  ERR_clear_error();
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  EVP_Digest(blob.data(), blob.size(), digest, &length, EVP_sha256(), nullptr);
  return "SHA256:" + base64_encode(std::string_view(reinterpret_cast<const char*>(digest), length), false);
}

std::string PublicKey::to_pem() const {
  Bio bio(BIO_new(BIO_s_mem()), BIO_free);
  PEM_write_bio_PUBKEY(bio.get(), key_.get());
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<std::size_t>(n));
}

PrivateKey PrivateKey::load_pem_file(const std::string& path, const std::optional<std::string>& passphrase) {
  const std::string pem = read_key_file(path);
  Bio bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())), BIO_free);
  struct Pass {
    const std::optional<std::string>* text;
    bool asked = false;
  } pass{&passphrase};
  auto callback = [](char* buf, int size, int, void* user) -> int {
    auto* p = static_cast<Pass*>(user);
    p->asked = true;
    if (!p->text->has_value()) return -1;
    const std::string& text = **p->text;
    const int n = std::min(size, static_cast<int>(text.size()));
    std::memcpy(buf, text.data(), static_cast<std::size_t>(n));
    return n;
  };
  EVP_PKEY* key = PEM_read_bio_PrivateKey(bio.get(), nullptr, callback, &pass);
  ERR_clear_error();
  if (key == nullptr) {
    if (pass.asked && !passphrase.has_value())
      throw Error(path + ": the private key is encrypted; give its pass-phrase with --password-stdin");
    if (pass.asked) throw Error(path + ": wrong pass-phrase for the private key");
    throw Error(path + ": not a PEM private key (give an RSA, ECDSA or Ed25519 private key)");
  }
  KeyHandle handle = own(key);
  check_supported(key, path);
  return PrivateKey(handle);
}

std::string PrivateKey::sign(std::string_view message) const {
  MdCtx ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  std::size_t length = 0;
  if (!ctx || EVP_DigestSignInit(ctx.get(), nullptr, digest_for(key_.get()), nullptr, key_.get()) != 1 ||
      EVP_DigestSign(ctx.get(), nullptr, &length, reinterpret_cast<const unsigned char*>(message.data()),
                     message.size()) != 1) {
    ERR_clear_error();
    throw Error("signing with the private key failed");
  }
  std::string signature(length, '\0');
  if (EVP_DigestSign(ctx.get(), reinterpret_cast<unsigned char*>(signature.data()), &length,
                     reinterpret_cast<const unsigned char*>(message.data()), message.size()) != 1) {
    ERR_clear_error();
    throw Error("signing with the private key failed");
  }
  signature.resize(length);
  return signature;
}

}  // namespace capsa::signing
