#pragma once
// The OpenPGP HTTP Keyserver Protocol (draft-shaw-openpgp-hkp) over libcurl, as
// Apptainer's key commands speak it:
//   GET  /pks/lookup?op=index&options=mr&search=TERM   the machine-readable index
//   GET  /pks/lookup?op=get&options=mr&search=0xFPR     the armored key
//   POST /pks/add  (keytext=ARMORED, form-encoded)        a key for the keyserver
// Several keyservers are asked in order (verify): the next one when one cannot be reached
// or does not answer 2xx.
#include <string>
#include <vector>

#include "keyserver/keyservers.hpp"
#include "util/error.hpp"

namespace capsa::keyserver {

// Every keyserver asked answered 404: no key matches.
class KeyNotFound : public Error {
 public:
  using Error::Error;
};

class HkpClient {
 public:
  explicit HkpClient(std::vector<Target> targets);

  // The index of the keys matching `search` (a fingerprint or key ID with 0x, or words).
  std::string index(const std::string& search);
  // The armored public key(s) matching `search`.
  std::string get(const std::string& search);
  // Sends an armored public key; returns the keyserver's answer as text (markup removed).
  std::string add(const std::string& armored);

  // The keyserver that answered the last request.
  const std::string& answered_by() const { return answered_by_; }

 private:
  std::string lookup(const std::string& op, const std::string& search);
  std::vector<Target> targets_;
  std::string answered_by_;
};

}  // namespace capsa::keyserver
