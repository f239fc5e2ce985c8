#include "signing/ocsp.hpp"

#include <openssl/err.h>
#include <openssl/ocsp.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "registry/curl_handles.hpp"
#include "util/log.hpp"

namespace capsa::signing {
namespace {

constexpr long kConnectTimeoutSeconds = 10;
constexpr long kTransferTimeoutSeconds = 30;
constexpr std::size_t kMaxResponseBytes = 1 << 20;
// A delegated responder's certificate is checked in turn unless it carries
// id-pkix-ocsp-nocheck; this bounds that recursion.
constexpr int kMaxResponderDepth = 3;
// Clock skew allowed on the response's thisUpdate/nextUpdate (OpenSSL's own default).
constexpr long kValiditySkewSeconds = 300;

using Bio = std::unique_ptr<BIO, decltype(&BIO_free)>;
using Request = std::unique_ptr<OCSP_REQUEST, decltype(&OCSP_REQUEST_free)>;
using Response = std::unique_ptr<OCSP_RESPONSE, decltype(&OCSP_RESPONSE_free)>;
using BasicResponse = std::unique_ptr<OCSP_BASICRESP, decltype(&OCSP_BASICRESP_free)>;
using CertId = std::unique_ptr<OCSP_CERTID, decltype(&OCSP_CERTID_free)>;
using Strings = std::unique_ptr<STACK_OF(OPENSSL_STRING), decltype(&X509_email_free)>;
struct FreeCertStack {
  void operator()(STACK_OF(X509) * stack) const { sk_X509_pop_free(stack, X509_free); }
};
using CertStack = std::unique_ptr<STACK_OF(X509), FreeCertStack>;

std::string time_text(const ASN1_GENERALIZEDTIME* time) {
  Bio bio(BIO_new(BIO_s_mem()), BIO_free);
  ASN1_TIME_print(bio.get(), time);
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio.get(), &data);
  return {data, static_cast<std::size_t>(n)};
}

std::size_t collect(char* data, std::size_t size, std::size_t count, void* user) {
  auto* out = static_cast<std::string*>(user);
  if (out->size() + size * count > kMaxResponseBytes) return 0;  // makes curl fail the transfer
  out->append(data, size * count);
  return size * count;
}

// POSTs a DER request as RFC 6960 appendix A.1 describes (Go's client, which Apptainer
// uses, posts too).
std::string post(const std::string& url, const std::string& request, const std::string& who) {
  auto easy = registry::make_easy_handle();
  registry::HeaderList headers({"Content-Type: application/ocsp-request", "Accept: application/ocsp-response"});
  std::string body;
  char error[CURL_ERROR_SIZE] = {};
  curl_easy_setopt(easy.get(), CURLOPT_URL, url.c_str());
  curl_easy_setopt(easy.get(), CURLOPT_POSTFIELDS, request.data());
  curl_easy_setopt(easy.get(), CURLOPT_POSTFIELDSIZE, static_cast<long>(request.size()));
  curl_easy_setopt(easy.get(), CURLOPT_HTTPHEADER, headers.get());
  curl_easy_setopt(easy.get(), CURLOPT_WRITEFUNCTION, collect);
  curl_easy_setopt(easy.get(), CURLOPT_WRITEDATA, &body);
  curl_easy_setopt(easy.get(), CURLOPT_ERRORBUFFER, error);
  curl_easy_setopt(easy.get(), CURLOPT_CONNECTTIMEOUT, kConnectTimeoutSeconds);
  curl_easy_setopt(easy.get(), CURLOPT_TIMEOUT, kTransferTimeoutSeconds);
  curl_easy_setopt(easy.get(), CURLOPT_NOSIGNAL, 1L);
  registry::use_system_ca_bundle(easy.get());
  const CURLcode code = curl_easy_perform(easy.get());
  if (code != CURLE_OK)
    throw CertificateError(who + ": the OCSP responder " + url +
                           " cannot be reached: " + (error[0] != '\0' ? error : curl_easy_strerror(code)));
  long status = 0;
  curl_easy_getinfo(easy.get(), CURLINFO_RESPONSE_CODE, &status);
  if (status != 200)
    throw CertificateError(who + ": the OCSP responder " + url + " answered HTTP " + std::to_string(status));
  return body;
}

class RevocationChecker {
 public:
  RevocationChecker(const std::vector<Certificate>& chain, const TrustStore& store)
      : chain_(chain), store_(store), certs_(sk_X509_new_null()) {
    for (const auto& cert : chain) {
      X509_up_ref(cert.get());
      sk_X509_push(certs_.get(), cert.get());
    }
  }

  void run() const {
    const std::string leaf_file = chain_.front().file();
    for (std::size_t i = 0; i < chain_.size(); ++i) {
      X509* cert = chain_[i].get();
      if (X509_check_issued(cert, cert) == X509_V_OK) {
        log::verbose("OCSP: skipping the self-signed " + chain_[i].label());
        continue;
      }
      const std::string who = leaf_file + ": " + chain_[i].label();
      if (i + 1 == chain_.size())
        throw CertificateError(who +
                               ": its issuer is not among the certificates given, so its OCSP status "
                               "cannot be asked (give the root with --certificate-roots)");
      check(cert, chain_[i + 1].get(), who, 0);
    }
  }

 private:
  void check(X509* cert, X509* issuer, const std::string& who, int depth) const {
    Strings urls(X509_get1_ocsp(cert), X509_email_free);
    if (!urls || sk_OPENSSL_STRING_num(urls.get()) == 0)
      throw CertificateError(who + " names no OCSP responder (no OCSP URI in its authority information access)");
    const std::string url = sk_OPENSSL_STRING_value(urls.get(), 0);
    log::verbose("OCSP: asking " + url + " about " + who);

    // SHA-1 certificate IDs, as Apptainer's requests carry and every responder accepts.
    CertId id(OCSP_cert_to_id(EVP_sha1(), cert, issuer), OCSP_CERTID_free);
    Request request(OCSP_REQUEST_new(), OCSP_REQUEST_free);
    if (!id || !request || OCSP_request_add0_id(request.get(), OCSP_CERTID_dup(id.get())) == nullptr ||
        OCSP_request_add1_nonce(request.get(), nullptr, -1) != 1)
      throw Error("OpenSSL could not build an OCSP request");
    unsigned char* der = nullptr;
    const int der_size = i2d_OCSP_REQUEST(request.get(), &der);
    if (der_size <= 0) throw Error("OpenSSL could not encode an OCSP request");
    std::string encoded(reinterpret_cast<const char*>(der), static_cast<std::size_t>(der_size));
    OPENSSL_free(der);

    const std::string answer = post(url, encoded, who);
    const auto* bytes = reinterpret_cast<const unsigned char*>(answer.data());
    Response response(d2i_OCSP_RESPONSE(nullptr, &bytes, static_cast<long>(answer.size())), OCSP_RESPONSE_free);
    ERR_clear_error();
    if (!response) throw CertificateError(who + ": the OCSP responder " + url + " sent no OCSP response");
    const int status = OCSP_response_status(response.get());
    if (status != OCSP_RESPONSE_STATUS_SUCCESSFUL)
      throw CertificateError(who + ": the OCSP responder " + url + " refused the request (" +
                             OCSP_response_status_str(status) + ")");
    BasicResponse basic(OCSP_response_get1_basic(response.get()), OCSP_BASICRESP_free);
    if (!basic) throw CertificateError(who + ": the OCSP response from " + url + " is malformed");
    if (OCSP_check_nonce(request.get(), basic.get()) == 0)
      throw CertificateError(who + ": the OCSP response from " + url + " answers another request (nonce mismatch)");
    const int verified = OCSP_basic_verify(basic.get(), certs_.get(), store_.get(), 0);
    ERR_clear_error();
    if (verified <= 0)
      throw CertificateError(who + ": the OCSP response from " + url +
                             " is not signed by the certificate's issuer or a responder it authorised");

    int cert_status = 0, reason = 0;
    ASN1_GENERALIZEDTIME *revoked_at = nullptr, *this_update = nullptr, *next_update = nullptr;
    if (OCSP_resp_find_status(basic.get(), id.get(), &cert_status, &reason, &revoked_at, &this_update, &next_update) !=
        1)
      throw CertificateError(who + ": the OCSP response from " + url + " says nothing about it");
    const int fresh = OCSP_check_validity(this_update, next_update, kValiditySkewSeconds, -1);
    ERR_clear_error();
    if (fresh != 1)
      throw CertificateError(who + ": the OCSP response from " + url +
                             " is not current (thisUpdate in the future or nextUpdate past)");
    if (cert_status == V_OCSP_CERTSTATUS_REVOKED) {
      std::string message = who + " was revoked on " + time_text(revoked_at);
      if (reason >= 0) message += " (" + std::string(OCSP_crl_reason_str(reason)) + ")";
      throw CertificateError(message + ", says the OCSP responder " + url);
    }
    if (cert_status != V_OCSP_CERTSTATUS_GOOD)
      throw CertificateError(who + " is unknown to the OCSP responder " + url + ", so it cannot be trusted");
    check_responder(basic.get(), cert, issuer, who, url, depth);
  }

  // A delegated responder (not the issuer itself) vouches only while it is not revoked
  // itself, unless its certificate says not to ask (RFC 6960 4.2.2.2.1), as Apptainer checks.
  // A responder answering about its own certificate is taken at its word: asking it
  // again would never end.
  void check_responder(OCSP_BASICRESP* basic, X509* asked_about, X509* issuer, const std::string& who,
                       const std::string& url, int depth) const {
    X509* signer = nullptr;
    if (OCSP_resp_get0_signer(basic, &signer, certs_.get()) != 1 || signer == nullptr) return;
    if (X509_cmp(signer, issuer) == 0 || X509_cmp(signer, asked_about) == 0) return;
    if (X509_get_ext_by_NID(signer, NID_id_pkix_OCSP_noCheck, -1) >= 0) return;
    if (depth + 1 >= kMaxResponderDepth)
      throw CertificateError(who + ": the OCSP responders' certificates from " + url + " nest too deeply");
    check(signer, issuer, who + ", whose OCSP responder " + Certificate::describe(signer), depth + 1);
  }

  const std::vector<Certificate>& chain_;
  const TrustStore& store_;
  CertStack certs_;
};

}  // namespace

void check_revocation(const std::vector<Certificate>& chain, const TrustStore& store) {
  if (chain.empty()) return;
  RevocationChecker(chain, store).run();
}

}  // namespace capsa::signing
