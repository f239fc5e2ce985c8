#pragma once
// The machine-readable key index of an HKP keyserver (draft-shaw-openpgp-hkp §5.2):
//   info:VERSION:COUNT
//   pub:KEYID-OR-FINGERPRINT:ALGO:BITS:CREATED:EXPIRES:FLAGS
//   uid:ESCAPED-USER-ID:CREATED:EXPIRES:FLAGS
// and how `key search` shows it, in Apptainer's columns.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace capsa::keyserver {

struct IndexedKey {
  std::string key_id;     // as the keyserver gives it: a fingerprint (40 hex) or a key ID
  std::string algorithm;  // the OpenPGP number, as sent
  std::string bits;
  std::string created, expires;       // Unix seconds, as sent ("" when the server left them out)
  std::string flags;                  // r revoked, d disabled, e expired
  std::vector<std::string> user_ids;  // unescaped
};

struct KeyIndex {
  std::optional<int> count;  // the info line's, when there is one
  std::vector<IndexedKey> keys;
};

// FormatError when a line is malformed or the info line's count differs from the keys.
KeyIndex parse_index(const std::string& text);

// `key search` output: "Showing N results\n\n" then KEY ID, BITS, NAME/EMAIL columns (or,
// with `long_list`, FINGERPRINT, ALGORITHM, BITS, CREATION DATE, EXPIRATION DATE, STATUS).
std::string format_index(const KeyIndex& index, bool long_list);

}  // namespace capsa::keyserver
