#include "squashfs/window_file.hpp"

#include <sqfs/error.h>
#include <sys/types.h>
#include <unistd.h>

#include <cerrno>
#include <type_traits>

namespace capsa::squashfs {
namespace {

static_assert(std::is_standard_layout_v<WindowFile>, "libsquashfs hands back &base as the WindowFile");

const WindowFile& window_of(const sqfs_file_t* file) { return *reinterpret_cast<const WindowFile*>(file); }

int refuse_write(sqfs_file_t*, sqfs_u64, const void*, size_t) { return SQFS_ERROR_UNSUPPORTED; }
int refuse_truncate(sqfs_file_t*, sqfs_u64) { return SQFS_ERROR_UNSUPPORTED; }
sqfs_u64 window_size(const sqfs_file_t* file) { return window_of(file).size; }
void owned_elsewhere(sqfs_object_t*) {}

}  // namespace

WindowFile& window_of(sqfs_file_t* file) { return *reinterpret_cast<WindowFile*>(file); }

void open_window(WindowFile& window, int fd, std::uint64_t offset, std::uint64_t size) {
  window.base = {};
  window.base.base.destroy = owned_elsewhere;
  window.base.base.copy = nullptr;  // sqfs_copy then fails cleanly; nothing copies an image
  window.base.read_at = read_window;
  window.base.write_at = refuse_write;
  window.base.get_size = window_size;
  window.base.truncate = refuse_truncate;
  window.fd = fd;
  window.offset = offset;
  window.size = size;
  window.read_errno.store(0, std::memory_order_relaxed);
}

int read_window(sqfs_file_t* file, sqfs_u64 offset, void* buffer, size_t size) {
  WindowFile& w = window_of(file);
  if (offset > w.size || size > w.size - offset) return SQFS_ERROR_OUT_OF_BOUNDS;
  auto* out = static_cast<char*>(buffer);
  while (size > 0) {
    ssize_t n = ::pread(w.fd, out, size, static_cast<off_t>(w.offset + offset));
    if (n < 0) {
      if (errno == EINTR) continue;
      w.read_errno.store(errno, std::memory_order_relaxed);
      return SQFS_ERROR_IO;
    }
    if (n == 0) return SQFS_ERROR_OUT_OF_BOUNDS;  // the file is shorter than the window
    out += n;
    offset += static_cast<std::uint64_t>(n);
    size -= static_cast<std::size_t>(n);
  }
  return 0;
}

}  // namespace capsa::squashfs
