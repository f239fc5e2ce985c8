#include "runtime/image_lease.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "util/error.hpp"

namespace capsa::runtime {

void hold_image_unchanged(int fd, const std::string& image) {
  if (::geteuid() == 0) return;
  struct stat st {};
  if (::fstat(fd, &st) != 0) throw_errno(image);
  if (st.st_uid != ::geteuid()) {
    // Not the caller's: only the modes could let them write it, and only the owner (or
    // CAP_LEASE) may take a lease.
    const std::string opened = "/proc/self/fd/" + std::to_string(fd);
    if (::faccessat(AT_FDCWD, opened.c_str(), W_OK, AT_EACCESS) != 0) return;
    throw Error(image + ": execution control cannot vouch for an image you can write but do not own "
                        "while it runs: copy it to a file of your own, or ask its owner to make it read-only");
  }
  if (::fcntl(fd, F_SETSIG, SIGKILL) != 0) throw_errno(image + ": holding the checked image unchanged");
  if (::fcntl(fd, F_SETLEASE, F_RDLCK) != 0) {
    if (errno == EAGAIN || errno == EBUSY)
      throw Error(image + " is open for writing: execution control cannot vouch for it while it runs; "
                          "nothing was run (close what writes it and run again)");
    throw_errno(image + ": holding the checked image unchanged");
  }
}

}  // namespace capsa::runtime
