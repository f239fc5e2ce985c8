#include "runtime/node_lock.hpp"

#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>

namespace capsa::runtime {

UniqueFd open_node_lock(const std::string& name) {
  constexpr const char* kDirectory = "/run/capsa";
  if (::mkdir(kDirectory, 0755) != 0 && errno != EEXIST) return {};
  const std::string path = std::string(kDirectory) + "/" + name;
  return UniqueFd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
}

}  // namespace capsa::runtime
