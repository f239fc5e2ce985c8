#pragma once
// Where the administrator's execution control list is: PREFIX/etc/capsa/ecl.toml, found
// as capsa.conf is (util/install_layout.hpp), never from a flag or the environment, so
// that no user can point capsa at a list of their own.
#include <string>

namespace capsa::ecl {

// The first candidate that exists (readable or not: an unreadable list must refuse, not
// vanish), else "".
std::string ecl_file_path();

}  // namespace capsa::ecl
