#include "util/own_directory.hpp"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

namespace capsa {

bool is_own_directory(const std::string& path, uid_t uid) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == uid;
}

std::string own_directory(const std::string& parent, const std::string& name, uid_t uid, bool make) {
  std::string usual = parent + "/" + name;
  if (make && ::mkdir(usual.c_str(), 0700) != 0 && errno != EEXIST)
    throw std::system_error(errno, std::generic_category(), "making " + usual);
  if (is_own_directory(usual, uid)) return usual;
  const std::string stem = name + ".";
  std::string first;
  if (DIR* dir = ::opendir(parent.c_str())) {
    while (const dirent* entry = ::readdir(dir)) {
      const std::string candidate = entry->d_name;
      if (candidate.size() == stem.size() + 6 && candidate.starts_with(stem) && (first.empty() || candidate < first) &&
          is_own_directory(std::string(parent).append("/").append(candidate), uid))
        first = candidate;
    }
    ::closedir(dir);
  }
  if (!first.empty()) return parent + "/" + first;
  if (!make) return "";
  std::string pattern = usual + ".XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr)
    throw std::system_error(errno, std::generic_category(), "making " + pattern);
  return pattern;
}

}  // namespace capsa
