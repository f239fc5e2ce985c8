#include "util/error.hpp"

#include <cerrno>
#include <cstring>

namespace capsa {

SystemError::SystemError(const std::string& what, int errno_value)
    : Error(what + ": " + std::strerror(errno_value)), errno_value_(errno_value) {}

void throw_errno(const std::string& what) { throw SystemError(what, errno); }

}  // namespace capsa
