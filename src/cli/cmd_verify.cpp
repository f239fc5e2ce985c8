// `capsa verify`: checks an image's signatures (signing/verify.hpp) and prints who signed
// what, as `apptainer verify`.
#include <iostream>
#include <memory>

#include "cli/commands.hpp"
#include "cli/refused_flags.hpp"
#include "keyserver/hkp_client.hpp"
#include "keyserver/keyservers.hpp"
#include "library/remotes.hpp"
#include "signing/report.hpp"
#include "signing/verify.hpp"
#include "util/error.hpp"
#include "util/log.hpp"

namespace capsa::cli {
namespace {

// Apptainer's verify without --local: a key no local keyring holds is asked of the
// keyservers, in order, and used for this verification (it is not imported).
std::function<std::optional<std::string>(const std::string&)> key_fetcher(const std::string& url) {
  auto targets =
      keyserver::targets_for(library::Remotes::load(), url.empty() ? std::nullopt : std::optional<std::string>(url),
                             keyserver::Operation::kVerify, nullptr);
  if (targets.empty()) return {};
  return [targets](const std::string& fingerprint) -> std::optional<std::string> {
    keyserver::HkpClient client(targets);
    try {
      std::string armored = client.get("0x" + fingerprint);
      log::info("Key " + fingerprint + " fetched from keyserver " + client.answered_by());
      return armored;
    } catch (const keyserver::KeyNotFound&) {
      return std::nullopt;
    }
  };
}

}  // namespace

void add_verify_command(CLI::App& app) {
  struct Flags {
    std::string image;
    std::string key;
    std::string certificate;
    std::string intermediates;
    std::string roots;
    bool ocsp = false;
    std::string url;
    std::uint32_t group_id = 0;
    std::uint32_t sif_id = 0;
    bool all = false;
    bool legacy = false;
    bool local = false;
    bool json = false;
  };
  auto f = std::make_shared<Flags>();
  auto* cmd = app.add_subcommand("verify", "Verify the signatures of a SIF image");
  cmd->add_option("image", f->image, "SIF image to verify")->required();
  cmd->add_option("--key", f->key, "Verify key-pair (DSSE) signatures with this PEM public key (RSA, ECDSA, Ed25519)")
      ->envname("APPTAINER_VERIFY_KEY");
  auto* certificate =
      cmd->add_option("--certificate", f->certificate,
                      "Verify key-pair (DSSE) signatures with the key of this PEM X.509 certificate, once it chains to "
                      "a trusted root and may sign code")
          ->envname("APPTAINER_VERIFY_CERTIFICATE");
  auto* intermediates = cmd->add_option("--certificate-intermediates", f->intermediates,
                                        "PEM file of intermediate CA certificates for --certificate's chain")
                            ->envname("APPTAINER_VERIFY_INTERMEDIATES");
  auto* roots = cmd->add_option("--certificate-roots", f->roots,
                                "PEM file of the root CA certificates --certificate must chain to (default: the "
                                "system's)")
                    ->envname("APPTAINER_VERIFY_ROOTS");
  auto* ocsp = cmd->add_flag("--ocsp-verify", f->ocsp,
                             "With --certificate: ask the OCSP responders the chain's certificates name whether they "
                             "were revoked")
                   ->envname("APPTAINER_VERIFY_OCSP");
  auto* group = cmd->add_option("-g,--group-id,--groupid", f->group_id, "Verify the objects of this group only");
  auto* object = cmd->add_option("-i,--sif-id,--id", f->sif_id, "Verify this object only");
  cmd->add_flag("-a,--all", f->all, "With --legacy-insecure: verify every object on its own");
  cmd->add_flag("--legacy-insecure", f->legacy,
                "Verify legacy signatures (Singularity < 3.6; they do not protect the header or descriptors)");
  cmd->add_flag("-l,--local", f->local, "Only use keys from the local keyring (ask no keyserver)");
  cmd->add_option("-u,--url", f->url, "The keyserver to fetch missing keys from (default: the active remote's)");
  cmd->add_flag("-j,--json", f->json, "Print the result as JSON, as Apptainer does (nothing on failure)");
  cmd->footer(
      "OpenPGP signatures are checked against capsa's keyring (capsa key import) and Apptainer's "
      "(~/.apptainer/keys/pgp-public); a signer's key found in neither is fetched from the keyservers "
      "(--url, else the active remote's; not with --local) for this verification only; key-pair signatures against "
      "the PEM key given with --key, or the key of the X.509 certificate given with --certificate (which wins over "
      "--key, as in Apptainer). "
      "Exits non-zero with one line naming the object when a signature is missing or invalid, or a signed "
      "object, its descriptor or the header changed. See docs/signing.md.");
  cmd->callback([f, group, object, certificate, intermediates, roots, ocsp] {
    signing::VerifyOptions options;
    if (certificate->count() > 0 || !f->certificate.empty()) {
      if (f->certificate.empty()) throw Error("--certificate: give the signer's PEM certificate file");
      signing::CertificateOptions cert{f->certificate, std::nullopt, std::nullopt, f->ocsp};
      if (!f->intermediates.empty()) cert.intermediates_file = f->intermediates;
      if (!f->roots.empty()) cert.roots_file = f->roots;
      options.certificate = cert;
      if (!f->key.empty()) log::warning("--key is ignored with --certificate (the certificate's key is used)");
    } else {
      // Apptainer reads these only with --certificate; say so rather than pass silently.
      for (const auto* unused : {intermediates, roots, ocsp})
        if (unused->count() > 0) log::warning(unused->get_name() + " is ignored without --certificate");
      if (!f->key.empty()) options.public_key_files.push_back(f->key);
    }
    if (group->count() > 0) {
      if (f->group_id == 0) throw Error("--group-id: groups are numbered from 1");
      options.group_id = f->group_id;
    }
    if (object->count() > 0) {
      if (f->sif_id == 0) throw Error("--sif-id: objects are numbered from 1");
      options.object_id = f->sif_id;
    }
    if (f->key.empty() && !options.certificate && !f->local) options.fetch_key = key_fetcher(f->url);
    options.all = f->all;
    options.legacy = f->legacy;
    if (options.certificate) {
      log::verbose("Verifying image with key material from certificate '" + f->certificate + "'");
    } else if (f->key.empty()) {
      log::verbose("Verifying image with PGP key material");
    } else {
      log::verbose("Verifying image with key material from '" + f->key + "'");
    }
    signing::VerificationResult result = signing::verify_image(f->image, options);
    std::cout << (f->json ? signing::verification_json(result) : signing::verification_report(result)) << std::flush;
    log::info("Verified signature(s) from image '" + f->image + "'");
  });
}

}  // namespace capsa::cli
