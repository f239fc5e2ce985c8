#include "util/open_files.hpp"

#include <dirent.h>
#include <limits.h>
#include <unistd.h>

#include <memory>

namespace capsa {

bool has_files_open_under(pid_t pid, const std::string& dir) {
  const std::string fds = "/proc/" + std::to_string(pid) + "/fd";
  std::unique_ptr<DIR, int (*)(DIR*)> listing(::opendir(fds.c_str()), ::closedir);
  if (!listing) return false;
  const std::string prefix = dir.ends_with('/') ? dir : dir + "/";
  while (const dirent* entry = ::readdir(listing.get())) {
    if (entry->d_name[0] == '.') continue;
    char target[PATH_MAX];
    const std::string link = fds + "/" + entry->d_name;
    const ssize_t n = ::readlink(link.c_str(), target, sizeof target);
    if (n <= 0 || static_cast<std::size_t>(n) >= sizeof target) continue;
    const std::string_view path(target, static_cast<std::size_t>(n));
    if (path == dir || path.starts_with(prefix)) return true;
  }
  return false;
}

}  // namespace capsa
