#pragma once
// Paths taken apart: the one way capsa splits a path into its names.
#include <string>
#include <string_view>
#include <vector>

namespace capsa {

// The non-empty names of `path`, in order: "/a//b/" gives {"a", "b"}. "." and ".." are
// kept as names: what they mean is the caller's (a walk inside an image root stops at it).
std::vector<std::string> path_components(std::string_view path);

}  // namespace capsa
