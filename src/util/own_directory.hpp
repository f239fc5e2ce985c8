#pragma once
// A directory of one user's under a predictable name in a place every user may write
// (/tmp, a Slurm statedir), safe from squatting: another user who makes PARENT/NAME first
// must not block the user. When PARENT/NAME is not the user's own directory, the user's
// own PARENT/NAME.XXXXXX serves instead: the first by name (so that every process of the
// user agrees on it), else a new one from mkdtemp, a name nobody can make ahead. Used by
// the container's session directory and the Slurm plugin's state, which links no engine:
// this file needs nothing but the C library.
#include <sys/types.h>

#include <string>

namespace capsa {

// PARENT/NAME (made 0700 when `make` and missing) if it is `uid`'s own directory, else the
// user's own PARENT/NAME.XXXXXX as above; "" when there is none and `make` is false.
// Throws std::system_error naming the path when a directory cannot be made.
std::string own_directory(const std::string& parent, const std::string& name, uid_t uid, bool make);

// Whether `path` is a directory (not a link to one) owned by `uid`.
bool is_own_directory(const std::string& path, uid_t uid);

}  // namespace capsa
