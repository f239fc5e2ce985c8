#include "runtime/session_mount_point.hpp"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

#include "util/error.hpp"
#include "util/log.hpp"

namespace capsa::runtime {
namespace {

constexpr const char* kParent = "/tmp";

bool users_own_directory(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == ::getuid();
}

// One of the user's own PREFIX.XXXXXX in /tmp, or a new one.
std::string unpredictable_directory(const std::string& prefix) {
  const std::string stem = prefix.substr(prefix.rfind('/') + 1) + ".";
  if (DIR* tmp = ::opendir(kParent)) {
    std::string found;
    while (dirent* entry = ::readdir(tmp)) {
      const std::string name = entry->d_name;
      if (name.size() == stem.size() + 6 && name.starts_with(stem) &&
          users_own_directory(std::string(kParent) + "/" + name)) {
        found = std::string(kParent) + "/" + name;
        break;
      }
    }
    ::closedir(tmp);
    if (!found.empty()) return found;
  }
  std::string pattern = prefix + ".XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) throw_errno("making a session directory " + pattern);
  return pattern;
}

}  // namespace

std::string session_mount_point() {
  if (const char* dir = std::getenv("CAPSA_SESSION_DIR"); dir && *dir) return dir;
  std::string usual = std::string(kParent) + "/.capsa-session-" + std::to_string(::getuid());
  if (::mkdir(usual.c_str(), 0700) != 0 && errno != EEXIST) throw_errno(usual);
  if (users_own_directory(usual)) return usual;
  std::string other = unpredictable_directory(usual);
  log::debug(usual + " is not a directory of yours (made by another user?): using " + other);
  return other;
}

}  // namespace capsa::runtime
