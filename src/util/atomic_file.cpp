#include "util/atomic_file.hpp"

#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <vector>

#include "util/error.hpp"
#include "util/path.hpp"

namespace capsa {

namespace {

// Gives the open unnamed file `fd` the name `path` (EEXIST when taken). Through /proc,
// which needs no privilege (AT_EMPTY_PATH would need CAP_DAC_READ_SEARCH).
bool link_unnamed(int fd, const std::string& path) {
  std::string self = "/proc/self/fd/" + std::to_string(fd);
  return ::linkat(AT_FDCWD, self.c_str(), AT_FDCWD, path.c_str(), AT_SYMLINK_FOLLOW) == 0;
}

}  // namespace

AtomicFile::AtomicFile(std::string final_path, unsigned mode, Temporary temporary)
    : final_path_(std::move(final_path)) {
  if (temporary == Temporary::unnamed_if_possible) {
    int fd = ::open(directory_of(final_path_).c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, static_cast<mode_t>(mode));
    if (fd >= 0) {
      fd_.reset(fd);
      unnamed_ = true;
      return;
    }
    // Filesystems without O_TMPFILE answer EOPNOTSUPP (old kernels EISDIR or EINVAL);
    // anything else (a missing directory, no permission) fails below with a clearer message.
  }
  // mkstemp wants a writable template; the suffix keeps temporaries recognisable.
  std::string tmpl = final_path_ + ".capsa-tmp-XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  int fd = ::mkostemp(buf.data(), O_CLOEXEC);
  if (fd < 0) throw_errno("creating a temporary file next to " + final_path_);
  fd_.reset(fd);
  temp_path_ = buf.data();
  // mkstemp creates 0600; apply the requested mode minus the umask, as open(2) would.
  mode_t mask = ::umask(0);
  ::umask(mask);
  if (::fchmod(fd, static_cast<mode_t>(mode) & ~mask) != 0) throw_errno("chmod " + temp_path_);
}

AtomicFile::~AtomicFile() {
  if (!committed_ && !temp_path_.empty()) ::unlink(temp_path_.c_str());
}

void AtomicFile::commit(bool replace) {
  if (::fsync(fd_.get()) != 0) throw_errno("fsync " + (unnamed_ ? final_path_ : temp_path_));
  if (unnamed_) {
    if (!replace) {
      if (!link_unnamed(fd_.get(), final_path_)) throw_errno(final_path_);  // EEXIST: refused, race-free
      fd_.reset();
      committed_ = true;
      return;
    }
    // rename(2) needs a name: link to a fresh one, then rename it over the final path.
    // Only in between could a SIGKILL leave a file behind, and then a complete one.
    for (int attempt = 0;; ++attempt) {
      std::string candidate = final_path_ + ".capsa-tmp-" + std::to_string(::getpid()) + "-" + std::to_string(attempt);
      if (link_unnamed(fd_.get(), candidate)) {
        temp_path_ = candidate;
        break;
      }
      if (errno != EEXIST || attempt > 100) throw_errno("naming the new " + final_path_);
    }
  }
  fd_.reset();
  if (replace) {
    if (::rename(temp_path_.c_str(), final_path_.c_str()) != 0) throw_errno("rename to " + final_path_);
  } else {
    // link(2) fails with EEXIST instead of replacing, which makes "refuse to overwrite" race-free.
    if (::link(temp_path_.c_str(), final_path_.c_str()) != 0) throw_errno(final_path_);
    ::unlink(temp_path_.c_str());
  }
  committed_ = true;
}

}  // namespace capsa
