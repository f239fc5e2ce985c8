#pragma once
// What `verify` prints, in Apptainer's layout (cmd/internal/cli/pgp.go outputVerify), so
// that scripts reading Apptainer's output read capsa's.
#include <string>

#include "signing/verify.hpp"

namespace capsa::signing {

// For each signature: who signed ("[LOCAL]   Signing entity: NAME", "Fingerprint: …")
// and the table of objects it vouches for.
std::string verification_report(const VerificationResult& result);

// `verify --json`: Apptainer's {"Signatures":N,"SignerKeys":[{"Signer":{…}}]} with one
// entry per verified object, indented as Go's encoder does.
std::string verification_json(const VerificationResult& result);

}  // namespace capsa::signing

#include <vector>

#include "signing/gnupg_home.hpp"

namespace capsa::signing {

// `key list`: each key as Apptainer's sypgp prints it (index, user, creation time,
// fingerprint, length), under "Public key listing (DIR):".
std::string key_list_report(const std::vector<PgpKey>& keys, bool secret, const std::string& directory);

}  // namespace capsa::signing
