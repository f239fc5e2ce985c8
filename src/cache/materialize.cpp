#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "cache/cache.hpp"
#include "util/atomic_file.hpp"
#include "util/error.hpp"

namespace capsa::cache {
namespace {

// copy_file_range lets the kernel copy without user space buffers, and NFS 4.2 and
// CIFS turn it into a server-side copy; it fails with EXDEV/EINVAL/ENOSYS/EOPNOTSUPP
// on combinations that cannot (before Linux 5.3 across filesystems), then read/write.
bool copy_in_kernel(int in, int out, std::uint64_t size) {
  loff_t in_offset = 0, out_offset = 0;
  while (static_cast<std::uint64_t>(in_offset) < size) {
    ssize_t n = ::copy_file_range(in, &in_offset, out, &out_offset, size - static_cast<std::uint64_t>(in_offset), 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (in_offset == 0 && (errno == EXDEV || errno == EINVAL || errno == ENOSYS || errno == EOPNOTSUPP))
        return false;
      throw_errno("copying");
    }
    if (n == 0) throw Error("the cached file shrank while it was being copied");
  }
  return true;
}

}  // namespace

void materialize(int source_fd, const std::string& destination, unsigned mode, bool replace) {
  with_context("writing " + destination, [&] {
    // Unnamed until complete: a SIGKILL in the middle of a large copy leaves nothing.
    AtomicFile out(destination, mode, AtomicFile::Temporary::unnamed_if_possible);
    // FICLONE shares the extents (btrfs, XFS with reflink): instant, no extra space.
    if (::ioctl(out.fd(), FICLONE, source_fd) != 0) {
      std::uint64_t size = file_size(source_fd);
      if (!copy_in_kernel(source_fd, out.fd(), size)) copy_range_to(source_fd, 0, size, out.fd());
    }
    out.commit(replace);
  });
}

}  // namespace capsa::cache
