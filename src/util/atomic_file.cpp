#include "util/atomic_file.hpp"

#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <vector>

#include "util/error.hpp"

namespace capsa {

AtomicFile::AtomicFile(std::string final_path, unsigned mode) : final_path_(std::move(final_path)) {
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
  if (::fsync(fd_.get()) != 0) throw_errno("fsync " + temp_path_);
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
