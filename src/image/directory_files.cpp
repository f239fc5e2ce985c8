#include "image/directory_files.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "util/error.hpp"
#include "util/open_in_root.hpp"

namespace capsa::image {
namespace {

// For a lookup that failed with `err`: returns when that means "nothing of that kind is
// there" (ENXIO is what opening a socket gives), throws for any other failure.
void throw_unless_absent(const std::string& root, const std::string& path, int err) {
  if (err == ENOENT || err == ENOTDIR || err == ENXIO) return;
  if (err == ELOOP) throw FormatError(root + ": " + path + ": too many levels of symbolic links");
  throw SystemError(root + ": " + path, err);
}

}  // namespace

DirectoryFiles::DirectoryFiles(const std::string& root)
    : root_path_(root), root_(open_file(root, O_PATH | O_DIRECTORY)) {}

std::optional<std::string> DirectoryFiles::read_file(const std::string& path, std::uint64_t max_bytes) const {
  // One open, then fstat: O_NONBLOCK so that a FIFO planted in the tree cannot block
  // it (it is no regular file and is refused below), O_NOCTTY for a terminal.
  UniqueFd fd(open_in_root(root_.get(), path, O_RDONLY | O_NONBLOCK | O_NOCTTY));
  if (!fd) {
    throw_unless_absent(root_path_, path, errno);
    return std::nullopt;
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) throw_errno(root_path_ + ": " + path);
  if (!S_ISREG(st.st_mode)) return std::nullopt;
  auto too_large = [&](std::uint64_t size) {
    return FormatError(root_path_ + ": " + path + " is too large (" + std::to_string(size) + " bytes, limit " +
                       std::to_string(max_bytes) + ")");
  };
  if (static_cast<std::uint64_t>(st.st_size) > max_bytes) throw too_large(static_cast<std::uint64_t>(st.st_size));
  std::string content(static_cast<std::size_t>(st.st_size), '\0');
  std::size_t done = 0;
  for (;;) {
    if (done == content.size()) {
      // The file may have grown since fstat: read on, within the limit.
      if (content.size() > max_bytes) throw too_large(content.size());
      content.resize(std::min<std::uint64_t>(content.size() + 65536, max_bytes + 1));
    }
    ssize_t n = ::read(fd.get(), content.data() + done, content.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw_errno(root_path_ + ": reading " + path);
    }
    if (n == 0) break;
    done += static_cast<std::size_t>(n);
  }
  content.resize(done);
  return content;
}

std::optional<std::vector<std::string>> DirectoryFiles::list_directory(const std::string& path) const {
  int fd = open_in_root(root_.get(), path, O_RDONLY | O_DIRECTORY);
  if (fd < 0) {
    throw_unless_absent(root_path_, path, errno);
    return std::nullopt;
  }
  DIR* dir = ::fdopendir(fd);
  if (dir == nullptr) {
    int err = errno;
    ::close(fd);
    throw SystemError(root_path_ + ": " + path, err);
  }
  std::vector<std::string> names;
  errno = 0;
  while (dirent* entry = ::readdir(dir)) {
    std::string name = entry->d_name;
    if (name != "." && name != "..") names.push_back(std::move(name));
  }
  int err = errno;
  ::closedir(dir);
  if (err != 0) throw SystemError(root_path_ + ": listing " + path, err);
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace capsa::image
