#include "signing/dsse.hpp"

#include <nlohmann/json.hpp>

#include "signing/base64.hpp"
#include "util/error.hpp"

namespace capsa::signing {

std::string pre_authentication_encoding(std::string_view type, std::string_view body) {
  // Written by hand: the encoding is five fields joined by spaces (DSSE protocol.md);
  // no Debian library implements DSSE.
  std::string out = "DSSEv1 ";
  out += std::to_string(type.size()) + " ";
  out += type;
  out += " " + std::to_string(body.size()) + " ";
  out += body;
  return out;
}

std::optional<DsseEnvelope> parse_envelope(std::string_view text) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("payloadType") || !j["payloadType"].is_string())
    return std::nullopt;
  DsseEnvelope envelope;
  try {
    envelope.payload_type = j.at("payloadType").get<std::string>();
    auto payload = base64_decode(j.at("payload").get<std::string>());
    if (!payload) throw FormatError("the DSSE payload is not base64");
    envelope.payload = *payload;
    for (const auto& entry : j.at("signatures")) {
      DsseSignature signature;
      if (entry.contains("keyid") && entry["keyid"].is_string()) signature.keyid = entry["keyid"].get<std::string>();
      auto sig = base64_decode(entry.at("sig").get<std::string>());
      if (!sig) throw FormatError("a DSSE signature is not base64");
      signature.sig = *sig;
      envelope.signatures.push_back(signature);
    }
  } catch (const nlohmann::json::exception& e) {
    throw FormatError(std::string("malformed DSSE envelope: ") + e.what());
  }
  return envelope;
}

std::string serialize_envelope(const DsseEnvelope& envelope) {
  nlohmann::ordered_json j;
  j["payloadType"] = envelope.payload_type;
  j["payload"] = base64_encode(envelope.payload);
  j["signatures"] = nlohmann::ordered_json::array();
  for (const auto& signature : envelope.signatures) {
    nlohmann::ordered_json entry;
    entry["keyid"] = signature.keyid;
    entry["sig"] = base64_encode(signature.sig);
    j["signatures"].push_back(entry);
  }
  return j.dump();
}

DsseEnvelope sign_envelope(std::string_view payload_type, std::string_view payload,
                           const std::vector<PrivateKey>& keys) {
  DsseEnvelope envelope{std::string(payload_type), std::string(payload), {}};
  const std::string message = pre_authentication_encoding(payload_type, payload);
  for (const auto& key : keys) envelope.signatures.push_back({key.public_key().ssh_fingerprint(), key.sign(message)});
  return envelope;
}

std::vector<std::string> verify_envelope(const DsseEnvelope& envelope, const std::vector<PublicKey>& keys) {
  const std::string message = pre_authentication_encoding(envelope.payload_type, envelope.payload);
  std::vector<std::string> accepted;
  for (const auto& key : keys) {
    for (const auto& signature : envelope.signatures) {
      if (key.verify(message, signature.sig)) {
        accepted.push_back(key.ssh_fingerprint());
        break;
      }
    }
  }
  return accepted;
}

}  // namespace capsa::signing
