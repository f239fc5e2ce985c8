#include "encryption/wrapped_key.hpp"

#include <openssl/asn1.h>
#include <openssl/decoder.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/rsa.h>

#include <memory>

#include "util/error.hpp"
#include "util/fd.hpp"

namespace capsa::encryption {
namespace {

constexpr int kSha256Size = 32;

struct PkeyFree {
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
};
struct CtxFree {
  void operator()(EVP_PKEY_CTX* p) const { EVP_PKEY_CTX_free(p); }
};
struct BioFree {
  void operator()(BIO* p) const { BIO_free(p); }
};
using Pkey = std::unique_ptr<EVP_PKEY, PkeyFree>;

std::string pem_text(const KeyMaterial& key) {
  if (key.kind == KeyMaterial::Kind::PemData) return key.pem_data;
  if (key.kind != KeyMaterial::Kind::PemFile) throw Error(key.origin + " is not an RSA key");
  return with_context(key.origin + " " + key.pem_path, [&] { return read_whole_file(key.pem_path); });
}

std::string name_of(const KeyMaterial& key) {
  return key.kind == KeyMaterial::Kind::PemFile ? key.origin + " " + key.pem_path : key.origin;
}

// A passphrase-protected private key is refused, as Apptainer refuses it: nobody is asked.
int no_password(char*, std::size_t, std::size_t*, const OSSL_PARAM*, void*) { return 0; }

Pkey load(const KeyMaterial& key, int selection) {
  const std::string text = pem_text(key);
  EVP_PKEY* raw = nullptr;
  // The decoder takes PKCS#1 ("RSA PUBLIC KEY", "RSA PRIVATE KEY") and the generic forms.
  OSSL_DECODER_CTX* decoder = OSSL_DECODER_CTX_new_for_pkey(&raw, "PEM", nullptr, "RSA", selection, nullptr, nullptr);
  if (decoder != nullptr) {
    OSSL_DECODER_CTX_set_passphrase_cb(decoder, no_password, nullptr);
    const auto* data = reinterpret_cast<const unsigned char*>(text.data());
    std::size_t length = text.size();
    OSSL_DECODER_from_data(decoder, &data, &length);
    OSSL_DECODER_CTX_free(decoder);
  }
  ERR_clear_error();
  const bool want_private = selection == EVP_PKEY_KEYPAIR;
  if (raw == nullptr) {
    const bool encrypted = text.find("ENCRYPTED") != std::string::npos;
    throw Error(name_of(key) + ": not " + (want_private ? "an RSA private key" : "an RSA public key") + " in PEM form" +
                (encrypted ? " (passphrase-protected private keys are not supported)" : ""));
  }
  return Pkey(raw);
}

std::string openssl_error() {
  unsigned long code = ERR_get_error();
  ERR_clear_error();
  char buf[256];
  ERR_error_string_n(code, buf, sizeof buf);
  return buf;
}

std::unique_ptr<EVP_PKEY_CTX, CtxFree> oaep(EVP_PKEY* pkey, bool encrypt) {
  std::unique_ptr<EVP_PKEY_CTX, CtxFree> ctx(EVP_PKEY_CTX_new_from_pkey(nullptr, pkey, nullptr));
  if (!ctx || (encrypt ? EVP_PKEY_encrypt_init(ctx.get()) : EVP_PKEY_decrypt_init(ctx.get())) <= 0 ||
      EVP_PKEY_CTX_set_rsa_padding(ctx.get(), RSA_PKCS1_OAEP_PADDING) <= 0 ||
      EVP_PKEY_CTX_set_rsa_oaep_md(ctx.get(), EVP_sha256()) <= 0 ||
      EVP_PKEY_CTX_set_rsa_mgf1_md(ctx.get(), EVP_sha256()) <= 0)
    throw Error("cannot set up RSA-OAEP: " + openssl_error());
  return ctx;
}

}  // namespace

void check_public_key(const KeyMaterial& key) { load(key, EVP_PKEY_PUBLIC_KEY); }
void check_private_key(const KeyMaterial& key) { load(key, EVP_PKEY_KEYPAIR); }

std::string wrap_secret(const KeyMaterial& key, const std::string& secret) {
  Pkey pkey = load(key, EVP_PKEY_PUBLIC_KEY);
  const int size = EVP_PKEY_get_size(pkey.get());
  const int step = size - 2 * kSha256Size - 2;
  if (step <= 0) throw Error(name_of(key) + ": the RSA key is too small for RSA-OAEP with SHA-256");
  auto ctx = oaep(pkey.get(), true);
  std::string ciphertext;
  for (std::size_t start = 0; start < secret.size(); start += static_cast<std::size_t>(step)) {
    const std::size_t n = std::min(secret.size() - start, static_cast<std::size_t>(step));
    std::string piece(static_cast<std::size_t>(size), '\0');
    std::size_t out = piece.size();
    if (EVP_PKEY_encrypt(ctx.get(), reinterpret_cast<unsigned char*>(piece.data()), &out,
                         reinterpret_cast<const unsigned char*>(secret.data() + start), n) <= 0)
      throw Error("encrypting the image key for " + name_of(key) + ": " + openssl_error());
    ciphertext.append(piece.data(), out);
  }
  ASN1_OCTET_STRING* octets = ASN1_OCTET_STRING_new();
  ASN1_OCTET_STRING_set(octets, reinterpret_cast<const unsigned char*>(ciphertext.data()),
                        static_cast<int>(ciphertext.size()));
  unsigned char* der = nullptr;
  const int der_size = i2d_ASN1_OCTET_STRING(octets, &der);
  ASN1_OCTET_STRING_free(octets);
  if (der_size <= 0) throw Error("encoding the wrapped image key: " + openssl_error());
  std::unique_ptr<BIO, BioFree> bio(BIO_new(BIO_s_mem()));
  PEM_write_bio(bio.get(), "MESSAGE", "", der, der_size);
  OPENSSL_free(der);
  char* text = nullptr;
  const long length = BIO_get_mem_data(bio.get(), &text);
  return {text, static_cast<std::size_t>(length)};
}

std::string unwrap_secret(const KeyMaterial& key, const std::string& message, const std::string& image) {
  Pkey pkey = load(key, EVP_PKEY_KEYPAIR);
  std::unique_ptr<BIO, BioFree> bio(BIO_new_mem_buf(message.data(), static_cast<int>(message.size())));
  char* name = nullptr;
  char* header = nullptr;
  unsigned char* der = nullptr;
  long der_size = 0;
  if (PEM_read_bio(bio.get(), &name, &header, &der, &der_size) != 1) {
    ERR_clear_error();
    throw Error(image + ": its encrypted key (CryptoMessage) is not a PEM message (the image is damaged)");
  }
  OPENSSL_free(name);
  OPENSSL_free(header);
  const unsigned char* cursor = der;
  ASN1_OCTET_STRING* octets = d2i_ASN1_OCTET_STRING(nullptr, &cursor, der_size);
  OPENSSL_free(der);
  if (octets == nullptr) {
    ERR_clear_error();
    throw Error(image + ": its encrypted key (CryptoMessage) is not an OCTET STRING (the image is damaged)");
  }
  const std::string ciphertext(reinterpret_cast<const char*>(ASN1_STRING_get0_data(octets)),
                               static_cast<std::size_t>(ASN1_STRING_length(octets)));
  ASN1_OCTET_STRING_free(octets);
  const auto size = static_cast<std::size_t>(EVP_PKEY_get_size(pkey.get()));
  auto ctx = oaep(pkey.get(), false);
  std::string secret;
  for (std::size_t start = 0; start < ciphertext.size(); start += size) {
    const std::size_t n = std::min(ciphertext.size() - start, size);
    std::string piece(size, '\0');
    std::size_t out = piece.size();
    if (EVP_PKEY_decrypt(ctx.get(), reinterpret_cast<unsigned char*>(piece.data()), &out,
                         reinterpret_cast<const unsigned char*>(ciphertext.data() + start), n) <= 0) {
      ERR_clear_error();
      throw Error(name_of(key) + ": this private key does not decrypt " + image +
                  " (it was encrypted for another key)");
    }
    secret.append(piece.data(), out);
  }
  return secret;
}

std::string new_random_secret() {
  // Apptainer's (internal/pkg/image/packer/gocryptfs.go): 32 hexadecimal digits, the
  // MD5 of 32 random bytes; 16 random bytes written in hexadecimal are as good a secret.
  unsigned char bytes[16];
  if (RAND_bytes(bytes, sizeof bytes) != 1) throw Error("cannot draw a random key (OpenSSL's RAND_bytes failed)");
  static constexpr char kHex[] = "0123456789abcdef";
  std::string secret;
  for (unsigned char b : bytes) {
    secret.push_back(kHex[b >> 4]);
    secret.push_back(kHex[b & 15]);
  }
  return secret;
}

}  // namespace capsa::encryption
