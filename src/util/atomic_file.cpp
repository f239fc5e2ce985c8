#include "util/atomic_file.hpp"

#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <random>
#include <vector>

#include "util/error.hpp"

namespace capsa {
namespace {

std::string directory_of(const std::string& path) {
  auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string random_suffix() {
  static const char alphabet[] = "abcdefghijklmnopqrstuvwxyz0123456789";
  std::random_device device;
  std::string s;
  for (int i = 0; i < 8; ++i) s += alphabet[device() % (sizeof alphabet - 1)];
  return s;
}

}  // namespace

AtomicFile::AtomicFile(std::string final_path, unsigned mode) : final_path_(std::move(final_path)) {
  // O_TMPFILE applies the umask to `mode` as open(2) does.
  int fd = ::open(directory_of(final_path_).c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, static_cast<mode_t>(mode));
  if (fd >= 0) {
    fd_.reset(fd);
    unnamed_ = true;
    temp_path_ = "/proc/self/fd/" + std::to_string(fd);
    return;
  }
  // EOPNOTSUPP/EISDIR/EINVAL: the filesystem or kernel has no O_TMPFILE; other errors
  // (no such directory, no permission) are reported by the named fallback just the same.
  create_named(mode);
}

void AtomicFile::create_named(unsigned mode) {
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
  if (!committed_ && !unnamed_ && !temp_path_.empty()) ::unlink(temp_path_.c_str());
}

// linkat through /proc/self/fd names an O_TMPFILE file without CAP_DAC_READ_SEARCH
// (which AT_EMPTY_PATH would need).
void AtomicFile::link_unnamed(bool replace) {
  if (!replace) {
    // Fails with EEXIST instead of replacing: "refuse to overwrite" is race-free.
    if (::linkat(AT_FDCWD, temp_path_.c_str(), AT_FDCWD, final_path_.c_str(), AT_SYMLINK_FOLLOW) != 0)
      throw_errno(final_path_);
    return;
  }
  // Replacing needs a name to rename from; it exists only for these two calls.
  for (int attempt = 0;; ++attempt) {
    std::string named = final_path_ + ".capsa-tmp-" + random_suffix();
    if (::linkat(AT_FDCWD, temp_path_.c_str(), AT_FDCWD, named.c_str(), AT_SYMLINK_FOLLOW) != 0) {
      if (errno == EEXIST && attempt < 8) continue;
      throw_errno("linking the new " + final_path_);
    }
    if (::rename(named.c_str(), final_path_.c_str()) != 0) {
      int saved = errno;
      ::unlink(named.c_str());
      errno = saved;
      throw_errno("rename to " + final_path_);
    }
    return;
  }
}

void AtomicFile::commit(bool replace) {
  if (::fsync(fd_.get()) != 0) throw_errno("fsync " + final_path_);
  if (unnamed_) {
    link_unnamed(replace);
    fd_.reset();
    committed_ = true;
    return;
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
