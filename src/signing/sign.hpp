#pragma once
// Signing a SIF image in the current format, as Apptainer's `sign` does (apptainer/sif
// pkg/integrity sign.go): one Signature object per object group, in no group itself,
// linked to the group, holding the group's integrity metadata either clear-signed with an
// OpenPGP key (its fingerprint in the descriptor) or in a DSSE envelope signed with a PEM
// private key (an all-zero fingerprint).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "signing/gnupg_home.hpp"

namespace capsa::signing {

struct SignOptions {
  std::string private_key_file;               // --key: a PEM private key (DSSE); empty: OpenPGP
  std::optional<std::string> key_passphrase;  // for an encrypted PEM key
  PassphraseSource pgp_passphrase;            // asked when the OpenPGP secret key is protected
  std::optional<std::size_t> key_index;       // --keyidx: which secret key of `key list --secret`
  std::optional<std::uint32_t> group_id;      // --group-id: this group only
  std::optional<std::uint32_t> object_id;     // --sif-id: this object only
  std::int64_t time = 0;                      // the new descriptors' time
};

struct SignResult {
  std::vector<std::uint32_t> signature_ids;  // the Signature objects added
  std::string signer;                        // OpenPGP fingerprint, or the key's SHA256: fingerprint
};

// Throws Error (one line) when there is nothing to sign, no usable key, or the image
// cannot be written; the image is then unchanged.
SignResult sign_image(const std::string& path, const SignOptions& options);

}  // namespace capsa::signing
