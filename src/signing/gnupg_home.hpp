#pragma once
// One GnuPG home directory driven through GPGME: the OpenPGP side of signing (keys,
// clear-signed messages). capsa never touches the user's ~/.gnupg: its keyring is a home
// of its own (keyring.hpp), and verification uses a throw-away one.
#include <cstdint>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace capsa::signing {

// Asked for a pass-phrase when GnuPG needs one (loopback pinentry); nullopt: none known.
// The text never reaches a log, an error or argv.
using PassphraseSource = std::function<std::optional<std::string>()>;

struct PgpKey {
  std::string fingerprint;  // primary key, 40 upper-case hex digits
  std::string user_id;      // "Name (Comment) <email>" of the first user ID
  std::string name;
  std::string comment;
  std::string email;
  std::int64_t created = 0;  // Unix seconds
  unsigned int bits = 0;
  std::string algorithm;  // "RSA", "EdDSA", ...
  bool has_secret = false;
};

// The result of checking a clear-signed message.
struct ClearsignedMessage {
  std::string plaintext;
  std::string fingerprint;  // the signing key's primary fingerprint (upper-case hex)
  std::string name;         // of its first user ID
};

// Thrown by verify_clearsigned when the signing key is not in the keyring.
class UnknownKeyError : public std::runtime_error {
 public:
  UnknownKeyError(const std::string& message, std::string key_id)
      : std::runtime_error(message), key_id_(std::move(key_id)) {}
  const std::string& key_id() const { return key_id_; }

 private:
  std::string key_id_;
};

class GnupgHome {
 public:
  // Uses `directory` (created with mode 0700 when missing) as the GnuPG home.
  explicit GnupgHome(std::string directory);
  // A fresh home under $TMPDIR, removed with everything in it by the destructor.
  static GnupgHome temporary();
  GnupgHome(GnupgHome&& other) noexcept;
  GnupgHome(const GnupgHome&) = delete;
  GnupgHome& operator=(const GnupgHome&) = delete;
  GnupgHome& operator=(GnupgHome&&) = delete;
  // Stops the gpg-agent GnuPG started for this home, so that nothing is left running.
  ~GnupgHome();

  const std::string& directory() const { return directory_; }

  std::vector<PgpKey> list(bool secret) const;
  // Imports armored or binary OpenPGP keys; returns the fingerprints it saw. Throws
  // Error when `data` holds no key.
  std::vector<std::string> import(std::string_view data, const PassphraseSource& passphrase = {});
  // The same for a keyring of public keys only: Error when `data` holds a secret key.
  std::vector<std::string> import_public(std::string_view data);
  // All public keys (armored: text), or one key's, public or secret.
  std::string export_public(const std::string& fingerprint, bool armor) const;
  std::string export_secret(const std::string& fingerprint, bool armor, const PassphraseSource& passphrase);
  // Deletes a key: its secret part only, or the public key with any secret part.
  void remove(const std::string& fingerprint, bool secret_only);
  // Generates an RSA key that certifies and signs; returns its fingerprint. An empty
  // pass-phrase leaves the secret key unprotected.
  std::string create_key(const std::string& user_id, unsigned int bits, const std::string& passphrase);
  // Protects the secret key `fingerprint` with `next` instead of `current` (empty: the key
  // has no pass-phrase now, or whichever it has is not known).
  void change_passphrase(const std::string& fingerprint, const std::string& current, const std::string& next);
  // A clear-signed message (SHA-256) made with the key `fingerprint`.
  std::string clearsign(const std::string& fingerprint, std::string_view text, const PassphraseSource& passphrase);
  // Checks a clear-signed message against the keys of this home. Throws UnknownKeyError
  // when the key is missing, Error when the signature is bad or `text` is no such message.
  ClearsignedMessage verify_clearsigned(std::string_view text) const;

 private:
  std::vector<std::string> import_keys(std::string_view data, const PassphraseSource& passphrase, bool secret_allowed);

  std::string directory_;
  bool temporary_ = false;
  mutable bool agent_used_ = false;
};

}  // namespace capsa::signing
