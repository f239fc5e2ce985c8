#include "signing/report.hpp"

#include <cctype>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "sif/format.hpp"

namespace capsa::signing {
namespace {

std::string pad(std::string text, std::size_t width) {
  if (text.size() < width) text.append(width - text.size(), ' ');
  return text;
}

}  // namespace

std::string verification_report(const VerificationResult& result) {
  std::string out;
  for (const auto& signature : result.signatures) {
    for (const auto& signer : signature.signers) {
      // A key held locally is "[LOCAL]"; one fetched from a keyserver "[REMOTE]", as Apptainer says.
      const std::string prefix = pad(signer.remote ? "[REMOTE]" : "[LOCAL]", 18) + " ";
      if (!signer.certificate_subject.empty()) {
        out += prefix + "Signing certificate: " + signer.certificate_subject + "\n";
        out += prefix + "Signing key: " + signer.name + "\n";
      } else if (signature.format == SignatureFormat::Dsse) {
        out += prefix + "Signing key: " + signer.name + "\n";
      } else {
        out += prefix + "Signing entity: " + signer.name + "\n";
      }
      out += prefix + "Fingerprint: " + signer.fingerprint + "\n";
    }
    if (!signature.objects.empty()) {
      out += "Objects verified:\n";
      out += pad("ID", 4) + "|" + pad("GROUP", 8) + "|" + pad("LINK", 8) + "|TYPE\n";
      out += "------------------------------------------------\n";
    }
    for (const auto& d : signature.objects) {
      const std::string group = d.group_id() == 0 ? "NONE" : std::to_string(d.group_id());
      std::string link = "NONE";
      if (d.linked_id() != 0) link = std::to_string(d.linked_id()) + (d.linked_to_group() ? " (G)" : "");
      out += pad(std::to_string(d.id), 4) + "|" + pad(group, 8) + "|" + pad(link, 8) + "|" +
             std::string(sif::name_of(d.data_type)) + "\n";
    }
  }
  return out;
}

}  // namespace capsa::signing

#include "sif/report.hpp"

namespace capsa::signing {

std::string verification_json(const VerificationResult& result) {
  nlohmann::ordered_json keys = nlohmann::ordered_json::array();
  for (const auto& signature : result.signatures) {
    // Apptainer knows an entity (name, fingerprint) only for OpenPGP signatures.
    const bool pgp = signature.format != SignatureFormat::Dsse && !signature.signers.empty();
    std::string fingerprint = pgp ? signature.signers.front().fingerprint : "";
    for (char& c : fingerprint) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    for (const auto& d : signature.objects) {
      nlohmann::ordered_json signer;
      signer["Partition"] = std::string(sif::name_of(d.data_type));
      signer["Name"] = pgp ? signature.signers.front().name : "unknown";
      signer["Fingerprint"] = fingerprint;
      signer["KeyLocal"] = pgp && !signature.signers.front().remote;
      signer["KeyCheck"] = pgp;
      signer["DataCheck"] = true;
      keys.push_back({{"Signer", signer}});
    }
  }
  nlohmann::ordered_json out;
  out["Signatures"] = result.signatures.size();
  out["SignerKeys"] = keys;
  return out.dump(2) + "\n";
}

std::string key_list_report(const std::vector<PgpKey>& keys, bool secret, const std::string& directory) {
  std::string out = std::string(secret ? "Private" : "Public") + " key listing (" + directory + "):\n\n";
  // Go's tabwriter with two spaces of padding: the index column is "N)" wide, the labels
  // column as wide as "Length (in bits):".
  const std::size_t label_width = std::string("Length (in bits):").size() + 2;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const PgpKey& key = keys[i];
    const std::string index = std::to_string(i) + ")";
    const std::size_t index_width = index.size() + 2;
    out +=
        pad(index, index_width) + pad("User:", label_width) + key.name + " (" + key.comment + ") <" + key.email + ">\n";
    out += pad("", index_width) + pad("Creation time:", label_width) + sif::format_utc(key.created) + "\n";
    out += pad("", index_width) + pad("Fingerprint:", label_width) + key.fingerprint + "\n";
    out += pad("", index_width) + pad("Length (in bits):", label_width) + std::to_string(key.bits) + "\n\n";
  }
  return out;
}

}  // namespace capsa::signing
