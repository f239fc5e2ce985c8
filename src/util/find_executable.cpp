#include "util/find_executable.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>

namespace capsa {

std::string find_executable(const std::string& name, const std::string& path_list, RelativeEntries relative) {
  std::size_t start = 0;
  while (start <= path_list.size()) {
    std::size_t end = path_list.find(':', start);
    if (end == std::string::npos) end = path_list.size();
    std::string dir = path_list.substr(start, end - start);
    start = end + 1;
    if (relative == RelativeEntries::Skip && (dir.empty() || dir[0] != '/')) continue;
    std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    struct stat st {};
    if (::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(candidate.c_str(), X_OK) == 0)
      return candidate;
  }
  return "";
}

std::string find_system_program(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::string list = (path && *path ? std::string(path) + ":" : std::string()) + "/usr/sbin:/sbin:/usr/bin:/bin";
  return find_executable(name, list, RelativeEntries::Skip);
}

}  // namespace capsa
