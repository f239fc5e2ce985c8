#pragma once
// Key-pair keys in PEM files (RSA, ECDSA, Ed25519), as `apptainer sign --key` and
// `verify --key` take them, through OpenSSL. Signatures are what sigstore's signers make
// with SHA-256: RSA PKCS#1 v1.5, ECDSA ASN.1/DER, Ed25519 over the message itself.
#include <memory>
#include <optional>
#include <string>
#include <string_view>

struct evp_pkey_st;

namespace capsa::signing {

struct FreeKey {
  void operator()(evp_pkey_st* key) const;
};
using KeyHandle = std::shared_ptr<evp_pkey_st>;

class PublicKey {
 public:
  // A PEM public key (PKIX "PUBLIC KEY"). Throws Error
  // "<path>: not a PEM public key (...)" for anything else.
  static PublicKey load_pem_file(const std::string& path);
  static PublicKey load_pem(std::string_view pem, const std::string& what);
  // A key OpenSSL already holds (a certificate's); Error naming `what` for a type capsa
  // does not verify with.
  static PublicKey from_key(KeyHandle key, const std::string& what);

  bool verify(std::string_view message, std::string_view signature) const;
  // "RSA", "ECDSA" or "ED25519".
  std::string type_name() const;
  // OpenSSH's "SHA256:<base64>" fingerprint: the key ID sigstore writes into envelopes.
  std::string ssh_fingerprint() const;
  std::string to_pem() const;

 private:
  explicit PublicKey(KeyHandle key) : key_(std::move(key)) {}
  friend class PrivateKey;
  KeyHandle key_;
};

class PrivateKey {
 public:
  // A PEM private key; `passphrase` opens an encrypted one. Throws Error naming the file
  // when it is no private key, or an encrypted one without (or with a wrong) pass-phrase.
  static PrivateKey load_pem_file(const std::string& path, const std::optional<std::string>& passphrase);

  std::string sign(std::string_view message) const;
  PublicKey public_key() const { return PublicKey(key_); }

 private:
  explicit PrivateKey(KeyHandle key) : key_(std::move(key)) {}
  KeyHandle key_;
};

}  // namespace capsa::signing
