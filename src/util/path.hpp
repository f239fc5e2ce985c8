#pragma once
// Paths taken apart (the one way capsa splits a path into its names), and the few
// questions about a path that many callers ask.
#include <string>
#include <string_view>
#include <vector>

namespace capsa {

// The non-empty names of `path`, in order: "/a//b/" gives {"a", "b"}. "." and ".." are
// kept as names: what they mean is the caller's (a walk inside an image root stops at it).
std::vector<std::string> path_components(std::string_view path);

// The directory part of `path`: "a/b" gives "a", "/a" gives "/", "a" gives ".".
std::string directory_of(const std::string& path);

// Whether something has the name `path`. By default a symbolic link counts as itself
// (lstat: a dangling link is a name that is taken); FollowLinks::yes asks for its target.
enum class FollowLinks { no, yes };
bool path_exists(const std::string& path, FollowLinks follow = FollowLinks::no);

// Whether `path` is a directory, or a symbolic link to one (stat).
bool is_directory(const std::string& path);

}  // namespace capsa
