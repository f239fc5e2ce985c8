#include "cache/fs_ops.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <system_error>

#include "util/error.hpp"
#include "util/fd.hpp"

namespace capsa::cache {

void ensure_directory(const std::string& path, unsigned mode) {
  if (::mkdir(path.c_str(), static_cast<mode_t>(mode)) == 0) return;
  if (errno == ENOENT) {
    auto parent = std::filesystem::path(path).parent_path();
    if (parent.empty() || parent == path) throw_errno("creating directory " + path);
    ensure_directory(parent.string(), mode);
    if (::mkdir(path.c_str(), static_cast<mode_t>(mode)) == 0) return;
  }
  if (errno != EEXIST) throw_errno("creating directory " + path);
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw_errno("creating directory " + path);
  if (!S_ISDIR(st.st_mode)) throw Error(path + " exists and is not a directory; move it away or choose another cache directory");
}

void remove_tree(const std::string& path) {
  std::error_code error;
  std::filesystem::remove_all(path, error);
  if (error && error != std::errc::no_such_file_or_directory)
    throw SystemError("removing " + path, error.value());
}

void sync_directory(const std::string& path) {
  UniqueFd dir = open_file(path, O_RDONLY | O_DIRECTORY);
  // Some network filesystems refuse fsync on directories (EINVAL); their rename is
  // already synchronous on the server, so that is not an error.
  if (::fsync(dir.get()) != 0 && errno != EINVAL && errno != EROFS) throw_errno("fsync " + path);
}

std::string host_name() {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0 || host[0] == '\0') return "unknown-host";
  return host;
}

}  // namespace capsa::cache
