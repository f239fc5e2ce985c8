#pragma once
// Keyserver URIs as Apptainer accepts them: http:// and https:// as they are, hkp:// as
// http:// on port 11371 when none is given, hkps:// as https://.
#include <string>

namespace capsa::keyserver {

// Apptainer's default keyserver (used when no remote is in use, and as a remote's own
// keyserver until an administrator changes its list).
inline constexpr const char* kDefaultKeyserver = "https://keys.openpgp.org";

// SCHEME://HOST[:PORT][/PATH] with http or https and no trailing '/'. Error naming `uri`
// and what is accepted when it is no such URI.
std::string normalize_keyserver_uri(const std::string& uri);

// Whether two URIs name the same keyserver (scheme, host and port once normalized).
bool same_keyserver(const std::string& a, const std::string& b);

}  // namespace capsa::keyserver
