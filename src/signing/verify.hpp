#pragma once
// Checking the signatures of a SIF image, the way Apptainer's `verify` does
// (apptainer/sif pkg/integrity): every object group (or the chosen group or object) must
// carry a signature, each signature must be valid for a trusted key, and the signed
// digests must match the image's header, descriptors and data as they are now.
// The one entry point other code uses (an execution control list, a `run` that refuses
// unsigned images) is verify_image.
#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "sif/layout.hpp"
#include "util/error.hpp"

namespace capsa::signing {

// `verify --certificate`: the signer's X.509 certificate and what it must chain to.
struct CertificateOptions {
  std::string certificate_file;                   // PEM; its public key checks DSSE signatures
  std::optional<std::string> intermediates_file;  // PEM bundle: CAs between it and a root
  std::optional<std::string> roots_file;          // PEM bundle; nullopt: the system's roots
  bool ocsp = false;                              // --ocsp-verify: ask the chain's OCSP responders
};

struct VerifyOptions {
  // PEM public keys: DSSE (key-pair) signatures are checked with these and PGP ones are
  // refused, as `apptainer verify --key`. Empty: OpenPGP signatures, checked against the
  // user's keyring (keyring.hpp).
  std::vector<std::string> public_key_files;
  // Set: DSSE signatures are checked with this certificate's key once the certificate is
  // trusted (signing/certificate.hpp, signing/ocsp.hpp), and public_key_files are not
  // used, as Apptainer prefers --certificate to --key.
  std::optional<CertificateOptions> certificate;
  std::optional<std::uint32_t> group_id;   // --group-id: only this group
  std::optional<std::uint32_t> object_id;  // --sif-id: only this object
  bool legacy = false;                     // --legacy-insecure: signatures of Singularity < 3.6 (data only)
  bool all = false;                        // --all: with legacy, every grouped object on its own
  // OpenPGP keyring files (armored or binary key lists) to trust instead of the user's
  // keyrings: an execution control list trusts the administrator's global keyrings only,
  // so that no user can vouch for an image by importing a key. nullopt: the user's.
  std::optional<std::vector<std::string>> keyring_files;
  // A signature by a key that is not trusted is left out of the result instead of failing
  // the verification (Apptainer's ECL counts such signers as unvalidated); a group or
  // object left with no verified signature still fails.
  bool skip_untrusted = false;
  // Asked for the armored public key of a signer (40 hex digits) that no trusted keyring
  // holds: the keyservers' copy (Apptainer's verify without --local), or nullopt when none
  // has it. The key counts for this verification only; it is not kept.
  std::function<std::optional<std::string>(const std::string& fingerprint)> fetch_key;
};

enum class SignatureFormat { Pgp, Dsse, LegacyPgp };

struct Signer {
  // OpenPGP: the primary key's fingerprint (40 hex digits). Key pairs: the public key's
  // "SHA256:…" fingerprint (OpenSSH form, what envelopes carry as keyid).
  std::string fingerprint;
  std::string name;  // OpenPGP: the user ID's name; key pairs: "ED25519 key" and the like
  // A key from --certificate: the certificate's subject ("CN=Signer,O=Example").
  std::string certificate_subject;
  bool remote = false;  // OpenPGP: the key came from a keyserver (VerifyOptions::fetch_key)
};

struct VerifiedSignature {
  std::uint32_t signature_id = 0;
  SignatureFormat format = SignatureFormat::Pgp;
  std::vector<Signer> signers;
  std::vector<sif::Descriptor> objects;  // what this signature vouches for, in ID order
};

struct VerificationResult {
  std::vector<VerifiedSignature> signatures;
  // The fingerprints that signed object `id` (empty when none did).
  std::vector<std::string> signers_of(std::uint32_t id) const;
};

// A signature is missing, invalid, from an unknown key, or the image changed since it was
// signed. The message is one line naming the image and the object or signature.
class VerificationError : public Error {
 public:
  using Error::Error;
};

// Throws VerificationError (and FormatError for a file that is no SIF image, and
// CertificateError for a --certificate that is unreadable, not trusted or revoked).
VerificationResult verify_image(const std::string& path, const VerifyOptions& options);

// A signing key's fingerprint as the SIF signature descriptor records it (20 bytes), in
// the upper-case hex that keyrings and ecl.toml write.
std::string fingerprint_hex(const std::array<std::uint8_t, 20>& bytes);

}  // namespace capsa::signing
