// The lean runner's keys (encryption_flags.hpp): a passphrase needs no OpenSSL (gocryptfs
// derives its key itself), so the runner runs such images; a PEM key must be checked and
// the image's wrapped secret opened with OpenSSL, which the runner does not link, so
// capsa-full runs the command, with the same arguments (nothing has been read from
// standard input: only --passphrase reads it).
#include "cli/encryption_flags.hpp"
#include "cli/forward.hpp"

namespace capsa::cli {

void set_run_key(const encryption::KeyFlags& flags, runtime::ActionRequest& r) {
  r.encryption_key = key_from_flags(flags);
  if (r.encryption_key && r.encryption_key->kind != encryption::KeyMaterial::Kind::Passphrase) forward_to_full();
}

}  // namespace capsa::cli
