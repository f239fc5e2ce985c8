#include "signing/report.hpp"

#include <cstdio>

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
    // capsa checks only keys the user holds, so every signer is "[LOCAL]" in Apptainer's terms.
    const std::string prefix = pad("[LOCAL]", 18) + " ";
    for (const auto& signer : signature.signers) {
      if (signature.format == SignatureFormat::Dsse) {
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
