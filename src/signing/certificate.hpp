#pragma once
// X.509 certificates as `apptainer verify --certificate` takes them: the signer's PEM
// certificate, whose public key checks the key-pair (DSSE) signatures, trusted only once
// OpenSSL has built its chain through the intermediates to a root, every certificate on it
// is within its validity period, and the chain permits code signing (Apptainer asks Go's
// x509 for ExtKeyUsageCodeSigning).
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "signing/pem_key.hpp"
#include "util/error.hpp"

struct x509_st;
struct x509_store_st;

namespace capsa::signing {

// A certificate that cannot be read, is not trusted, or was revoked. One line naming the
// certificate (its file and subject) and what is wrong.
class CertificateError : public Error {
 public:
  using Error::Error;
};

class Certificate {
 public:
  // The first PEM certificate of `path` (as Apptainer reads --certificate).
  static Certificate load_pem_file(const std::string& path);
  // Every PEM certificate of `path` (--certificate-intermediates, --certificate-roots);
  // anything else in the file is an error, as in Apptainer.
  static std::vector<Certificate> load_pem_bundle(const std::string& path);

  // The subject in RFC 2253 form ("CN=Signer,O=Example"), as Go prints a pkix.Name.
  std::string subject() const;
  // The file it came from ("" for one a chain brought in).
  const std::string& file() const { return file_; }
  // "certificate 'CN=Signer' (leaf.pem)": how messages name it.
  std::string label() const;
  // "certificate 'CN=Signer'", for one OpenSSL holds.
  static std::string describe(x509_st* cert);
  PublicKey public_key() const;
  x509_st* get() const { return cert_.get(); }

 private:
  Certificate(std::shared_ptr<x509_st> cert, std::string file) : cert_(std::move(cert)), file_(std::move(file)) {}
  friend class TrustStore;
  std::shared_ptr<x509_st> cert_;
  std::string file_;
};

// The roots a certificate must chain to: those of --certificate-roots or, without it,
// the system's (OpenSSL's default paths), as Go uses the system pool.
class TrustStore {
 public:
  explicit TrustStore(const std::optional<std::vector<Certificate>>& roots);
  ~TrustStore();
  TrustStore(const TrustStore&) = delete;
  TrustStore& operator=(const TrustStore&) = delete;
  x509_store_st* get() const { return store_; }

  // The chain from `leaf` to a trusted root (leaf first) through `intermediates`, checked
  // by X509_verify_cert (signatures, validity periods, CA constraints) and for code
  // signing. Throws CertificateError naming the certificate and the reason.
  std::vector<Certificate> verify_chain(const Certificate& leaf, const std::vector<Certificate>& intermediates) const;

 private:
  x509_store_st* store_ = nullptr;
};

}  // namespace capsa::signing
