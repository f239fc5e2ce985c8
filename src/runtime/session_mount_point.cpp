#include "runtime/session_mount_point.hpp"

#include <unistd.h>

#include <cstdlib>
#include <system_error>

#include "util/error.hpp"
#include "util/log.hpp"
#include "util/own_directory.hpp"

namespace capsa::runtime {

std::string session_mount_point() {
  if (const char* dir = std::getenv("CAPSA_SESSION_DIR"); dir && *dir) return dir;
  const std::string name = ".capsa-session-" + std::to_string(::getuid());
  try {
    std::string chosen = own_directory("/tmp", name, ::getuid(), true);
    if (!chosen.ends_with(name)) log::debug("/tmp/" + name + " is not a directory of yours: using " + chosen);
    return chosen;
  } catch (const std::system_error& e) {
    throw SystemError(std::string("the session directory: ") + e.what(), e.code().value(), SystemError::kPreformatted);
  }
}

}  // namespace capsa::runtime
