#include "signing/certificate.hpp"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace capsa::signing {
namespace {

using Bio = std::unique_ptr<BIO, decltype(&BIO_free)>;
using StoreCtx = std::unique_ptr<X509_STORE_CTX, decltype(&X509_STORE_CTX_free)>;
struct FreeCertStack {
  void operator()(STACK_OF(X509) * stack) const { sk_X509_pop_free(stack, X509_free); }
};
using CertStack = std::unique_ptr<STACK_OF(X509), FreeCertStack>;

std::shared_ptr<X509> own(X509* cert) { return {cert, X509_free}; }

std::string read_certificate_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw CertificateError(path + ": cannot read the certificate file: " + std::strerror(errno));
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Certificates from PEM text, in order; nullptr-free. `first_only` stops after one.
std::vector<std::shared_ptr<X509>> parse_pem(const std::string& text, bool first_only) {
  Bio bio(BIO_new_mem_buf(text.data(), static_cast<int>(text.size())), BIO_free);
  std::vector<std::shared_ptr<X509>> out;
  while (X509* cert = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr)) {
    out.push_back(own(cert));
    if (first_only) break;
  }
  // The loop ends on "no start line" at the end of the text, or on a malformed block.
  const unsigned long error = ERR_peek_last_error();
  const bool clean_end = ERR_GET_REASON(error) == PEM_R_NO_START_LINE;
  ERR_clear_error();
  if (!first_only && !clean_end) out.clear();
  return out;
}

// Go's x509 (what Apptainer verifies with) checks the requested usage on every
// certificate of the chain; one without the extension permits everything. Written by hand
// because OpenSSL 3.0 has no code-signing purpose for X509_verify_cert (3.2 added one).
bool permits_code_signing(X509* cert) {
  const std::uint32_t usage = X509_get_extended_key_usage(cert);
  return (usage & (XKU_CODE_SIGN | XKU_ANYEKU)) != 0;
}

std::string why_untrusted(int error) {
  std::string reason = X509_verify_cert_error_string(error);
  switch (error) {
    case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT:
    case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY:
    case X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN:
    case X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT:
    case X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE:
      reason +=
          " (no chain to a trusted root: give the issuing root CA with --certificate-roots and any intermediate CA "
          "with --certificate-intermediates)";
      break;
    default:
      break;
  }
  return reason;
}

std::string subject_of(X509* cert) {
  Bio bio(BIO_new(BIO_s_mem()), BIO_free);
  X509_NAME_print_ex(bio.get(), X509_get_subject_name(cert), 0, XN_FLAG_RFC2253 & ~ASN1_STRFLGS_ESC_MSB);
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio.get(), &data);
  return {data, static_cast<std::size_t>(n)};
}

}  // namespace

Certificate Certificate::load_pem_file(const std::string& path) {
  auto certs = parse_pem(read_certificate_file(path), true);
  if (certs.empty()) throw CertificateError(path + ": not a PEM certificate (give the signer's X.509 certificate)");
  return {certs.front(), path};
}

std::vector<Certificate> Certificate::load_pem_bundle(const std::string& path) {
  auto certs = parse_pem(read_certificate_file(path), false);
  if (certs.empty()) throw CertificateError(path + ": not a file of PEM certificates (or one of them is malformed)");
  std::vector<Certificate> out;
  out.reserve(certs.size());
  for (auto& cert : certs) out.push_back(Certificate(cert, path));
  return out;
}

std::string Certificate::subject() const { return subject_of(cert_.get()); }

std::string Certificate::describe(X509* cert) { return "certificate '" + subject_of(cert) + "'"; }

std::string Certificate::label() const {
  std::string out = describe(cert_.get());
  if (!file_.empty()) out += " (" + std::filesystem::path(file_).filename().string() + ")";
  return out;
}

PublicKey Certificate::public_key() const {
  EVP_PKEY* key = X509_get_pubkey(cert_.get());
  if (key == nullptr) {
    ERR_clear_error();
    throw CertificateError(file_ + ": " + label() + " holds no public key OpenSSL can read");
  }
  return PublicKey::from_key(KeyHandle(key, FreeKey{}), file_ + ": " + label());
}

TrustStore::TrustStore(const std::optional<std::vector<Certificate>>& roots) : store_(X509_STORE_new()) {
  if (store_ == nullptr) throw Error("OpenSSL could not make a certificate store");
  if (roots) {
    for (const auto& root : *roots) X509_STORE_add_cert(store_, root.get());
    // Go trusts every certificate of the roots pool as an anchor, a CA below a
    // self-signed root included; OpenSSL does so with partial chains allowed.
    X509_STORE_set_flags(store_, X509_V_FLAG_PARTIAL_CHAIN);
  } else {
    X509_STORE_set_default_paths(store_);
  }
  ERR_clear_error();
}

TrustStore::~TrustStore() { X509_STORE_free(store_); }

std::vector<Certificate> TrustStore::verify_chain(const Certificate& leaf,
                                                  const std::vector<Certificate>& intermediates) const {
  CertStack untrusted(sk_X509_new_null());
  for (const auto& cert : intermediates) {
    X509_up_ref(cert.get());
    sk_X509_push(untrusted.get(), cert.get());
  }
  StoreCtx ctx(X509_STORE_CTX_new(), X509_STORE_CTX_free);
  if (!ctx || X509_STORE_CTX_init(ctx.get(), store_, leaf.get(), untrusted.get()) != 1)
    throw Error("OpenSSL could not start verifying a certificate");
  const int ok = X509_verify_cert(ctx.get());
  ERR_clear_error();
  if (ok != 1) {
    const int error = X509_STORE_CTX_get_error(ctx.get());
    std::string where;
    if (X509* at = X509_STORE_CTX_get_current_cert(ctx.get()); at != nullptr && X509_cmp(at, leaf.get()) != 0)
      where = " (at " + Certificate::describe(at) + ")";
    throw CertificateError(leaf.file() + ": " + leaf.label() + " is not trusted: " + why_untrusted(error) + where);
  }
  std::vector<Certificate> chain;
  CertStack built(X509_STORE_CTX_get1_chain(ctx.get()));
  for (int i = 0; i < sk_X509_num(built.get()); ++i) {
    X509* cert = sk_X509_value(built.get(), i);
    X509_up_ref(cert);
    chain.push_back(Certificate(own(cert), i == 0 ? leaf.file() : ""));
  }
  for (const auto& cert : chain)
    if (!permits_code_signing(cert.get()))
      throw CertificateError(leaf.file() + ": " + cert.label() +
                             " does not permit code signing (its extended key usage lacks codeSigning)");
  return chain;
}

}  // namespace capsa::signing
