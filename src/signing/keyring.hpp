#pragma once
// Where a user's OpenPGP keys live. capsa's keyring is a GnuPG home of its own,
// ${CAPSA_KEYSDIR:-~/.capsa/keys}. Apptainer keeps its keys in
// ${APPTAINER_KEYSDIR:-~/.apptainer/keys}/pgp-public and pgp-secret (binary OpenPGP key
// lists written by Go's openpgp package, not GnuPG keyboxes): capsa reads pgp-public as
// well when it verifies, and `capsa key import` reads either file.
#include <string>
#include <vector>

#include "signing/gnupg_home.hpp"

namespace capsa::signing {

std::string capsa_keys_directory();
// Apptainer's public keyring file (which may not exist).
std::string apptainer_public_keyring();

// The user's keyring, created on first use.
GnupgHome open_user_keyring();

// Apptainer's system-wide public keyrings an administrator may have filled
// (global-pgp-public under /etc/apptainer, /usr/local/etc/apptainer, /etc/singularity).
std::vector<std::string> global_public_keyrings();

// Apptainer's global keyrings and capsa's own, PREFIX/etc/capsa/global-pgp-public (found
// as capsa.conf is): the keys an administrator trusts. What an execution control list
// checks signatures against.
std::vector<std::string> administrator_public_keyrings();

// A throw-away home holding the keys of `files` (OpenPGP key lists, armored or binary);
// files that do not exist or are empty are skipped.
GnupgHome public_keys_from(const std::vector<std::string>& files);

// A throw-away home holding every public key the user trusts: capsa's keyring,
// Apptainer's public keyring and the administrator's (capsa's global keyring, which
// `key --global` manages, and Apptainer's). What verification checks signatures against.
GnupgHome trusted_public_keys();

}  // namespace capsa::signing
