// capsa-full's keys (encryption_flags.hpp): PEM files checked with OpenSSL before
// anything is built or mounted, as Apptainer checks them, and wrapped secrets opened.
#include "cli/encryption_flags.hpp"
#include "encryption/wrapped_key.hpp"

namespace capsa::cli {

void set_run_key(const encryption::KeyFlags& flags, runtime::ActionRequest& r) {
  r.encryption_key = key_from_flags(flags);
  if (!r.encryption_key || r.encryption_key->kind == encryption::KeyMaterial::Kind::Passphrase) return;
  encryption::check_private_key(*r.encryption_key);
  r.unwrap_key = [key = *r.encryption_key](const std::string& wrapped, const std::string& image) {
    return encryption::unwrap_secret(key, wrapped, image);
  };
}

std::optional<encryption::KeyMaterial> build_key(const encryption::KeyFlags& flags) {
  std::optional<encryption::KeyMaterial> key = key_from_flags(flags);
  if (key && key->kind != encryption::KeyMaterial::Kind::Passphrase) encryption::check_public_key(*key);
  return key;
}

}  // namespace capsa::cli
