#pragma once
// WWW-Authenticate parsing (RFC 7235 §4.1 / RFC 6750 §3): several challenges per header,
// case-insensitive scheme and parameter names, quoted-string values whose commas and
// backslash escapes belong to the value.

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace capsa::registry {

struct Challenge {
  std::string scheme;                         // lower-case: "bearer", "basic"
  std::map<std::string, std::string> params;  // names lower-case

  std::string param(const std::string& name) const;
};

// Every challenge in one header value; malformed trailing input is ignored, never fatal.
std::vector<Challenge> parse_challenges(std::string_view header);

// The first challenge with `scheme` across several header values.
std::optional<Challenge> find_challenge(const std::vector<std::string>& headers, std::string_view scheme);

}  // namespace capsa::registry
