#pragma once
// `verify --ocsp-verify`: asks the OCSP responder (RFC 6960) each certificate's authority
// information access names whether it was revoked, as Apptainer does
// (internal/pkg/signature/verify_ocsp.go): every certificate of the verified chain but a
// self-signed root, each with its issuer from the chain. OpenSSL builds the request and
// checks the response (its signer is the issuer or a responder the issuer authorised,
// chained to the trusted roots; the nonce; thisUpdate/nextUpdate); libcurl carries it.
#include <vector>

#include "signing/certificate.hpp"

namespace capsa::signing {

// Throws CertificateError naming the certificate when one is revoked or unknown to its
// responder, names no responder, or the responder cannot be reached or gives no
// trustworthy answer.
void check_revocation(const std::vector<Certificate>& chain, const TrustStore& store);

}  // namespace capsa::signing
