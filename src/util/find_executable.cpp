#include "util/find_executable.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>

namespace capsa {

std::string first_on_path(const std::string& name, const std::string& path_list, RelativeEntries relative,
                          const std::function<bool(const std::string&)>& is_program) {
  std::size_t start = 0;
  while (start <= path_list.size()) {
    std::size_t end = path_list.find(':', start);
    if (end == std::string::npos) end = path_list.size();
    std::string dir = path_list.substr(start, end - start);
    start = end + 1;
    if (relative == RelativeEntries::Skip && (dir.empty() || dir[0] != '/')) continue;
    std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    if (is_program(candidate)) return candidate;
  }
  return "";
}

std::string find_executable(const std::string& name, const std::string& path_list, RelativeEntries relative) {
  return first_on_path(name, path_list, relative, [](const std::string& candidate) {
    struct stat st {};
    return ::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(candidate.c_str(), X_OK) == 0;
  });
}

std::string find_system_program(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::string list = (path && *path ? std::string(path) + ":" : std::string()) + "/usr/sbin:/sbin:/usr/bin:/bin";
  return find_executable(name, list, RelativeEntries::Skip);
}

}  // namespace capsa
