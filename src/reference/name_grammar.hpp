#pragma once
// The distribution reference grammar (distribution/reference's reference.go grammar),
// checked by hand: each rule is a few lines, and libstdc++'s std::regex recurses per
// character, which a long hostile reference can turn into a stack overflow.
// Each function returns why `text` is invalid, or nothing when it is valid.

#include <optional>
#include <string>
#include <string_view>

namespace capsa::reference::grammar {

// host[:port]: DNS-style labels joined by '.', or a bracketed IPv6 address; port 1-65535.
std::optional<std::string> registry_error(std::string_view registry);
// path-component ('/' path-component)*, path-component = [a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*
std::optional<std::string> repository_error(std::string_view repository);
// [a-zA-Z0-9_][a-zA-Z0-9._-]{0,127}
std::optional<std::string> tag_error(std::string_view tag);

}  // namespace capsa::reference::grammar
