#pragma once
// What `verify` prints, in Apptainer's layout (cmd/internal/cli/pgp.go outputVerify), so
// that scripts reading Apptainer's output read capsa's.
#include <string>

#include "signing/verify.hpp"

namespace capsa::signing {

// For each signature: who signed ("[LOCAL]   Signing entity: NAME", "Fingerprint: …")
// and the table of objects it vouches for.
std::string verification_report(const VerificationResult& result);

}  // namespace capsa::signing
