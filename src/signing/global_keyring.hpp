#pragma once
// The administrator's global public keyring, as Apptainer keeps one
// (SYSCONFDIR/apptainer/global-pgp-public): a binary OpenPGP key list that every user's
// `verify` trusts and that an execution control list checks signatures against. capsa's is
// PREFIX/etc/capsa/global-pgp-public of the running installation (config_candidates), which
// `capsa key ... --global` reads and changes. Changing it needs root, or an installation the
// caller owns (Apptainer: "root user or unprivileged installation only").
#include <string>

#include "signing/gnupg_home.hpp"

namespace capsa::signing {

// The file `key --global` manages (existing or not).
std::string global_keyring_file();

class GlobalKeyring {
 public:
  // Reads global_keyring_file() (missing: empty) into a throw-away GnuPG home.
  GlobalKeyring();

  const std::string& path() const { return path_; }
  GnupgHome& keys() { return home_; }

  // Throws Error, naming `command` and the file, unless the caller may change it: root,
  // or the owner of the folder that holds (or would hold) the file.
  void require_write_access(const std::string& command) const;
  // Writes every public key back (binary, mode 0644), replacing the file atomically.
  void save();

 private:
  std::string path_;
  GnupgHome home_;
};

}  // namespace capsa::signing
