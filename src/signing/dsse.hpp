#pragma once
// DSSE envelopes (github.com/secure-systems-lab/dsse, protocol v1): a payload, its type,
// and signatures over PAE(type, payload). SIF key-pair signatures are such envelopes
// with the payload type below and the integrity metadata as payload.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "signing/pem_key.hpp"

namespace capsa::signing {

inline constexpr std::string_view kSifMetadataPayloadType = "application/vnd.sylabs.sif-metadata+json";

struct DsseSignature {
  std::string keyid;
  std::string sig;  // raw signature bytes (base64 in the JSON)
};

struct DsseEnvelope {
  std::string payload_type;
  std::string payload;  // raw bytes (base64 in the JSON)
  std::vector<DsseSignature> signatures;
};

// DSSE's pre-authentication encoding: "DSSEv1 <len(type)> <type> <len(body)> <body>".
std::string pre_authentication_encoding(std::string_view type, std::string_view body);

// nullopt when `text` is no JSON object with a string payloadType (not an envelope at all);
// FormatError when it is one whose fields are malformed.
std::optional<DsseEnvelope> parse_envelope(std::string_view text);
std::string serialize_envelope(const DsseEnvelope& envelope);

DsseEnvelope sign_envelope(std::string_view payload_type, std::string_view payload,
                           const std::vector<PrivateKey>& keys);

// The keys (by ssh_fingerprint) each of which verified at least one of the envelope's
// signatures. Empty: no signature is valid for any of the keys.
std::vector<std::string> verify_envelope(const DsseEnvelope& envelope, const std::vector<PublicKey>& keys);

}  // namespace capsa::signing
