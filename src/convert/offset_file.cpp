#include "convert/offset_file.hpp"

#include <sqfs/error.h>
#include <sqfs/io.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <memory>

#include "squashfs/window_file.hpp"

namespace capsa::convert {
namespace {

using squashfs::window_of;
using squashfs::WindowFile;

// Reads go through the window's own hook (squashfs/window_file), confined to what has
// been written so far; these add writing, which grows the window.
int write_at(sqfs_file_t* file, sqfs_u64 offset, const void* buffer, size_t size) {
  WindowFile& f = window_of(file);
  const auto* in = static_cast<const char*>(buffer);
  sqfs_u64 at = offset;
  for (size_t left = size; left > 0;) {
    ssize_t n = ::pwrite(f.fd, in, left, static_cast<off_t>(f.offset + at));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return SQFS_ERROR_IO;
    in += n;
    at += static_cast<sqfs_u64>(n);
    left -= static_cast<size_t>(n);
  }
  f.size = std::max<std::uint64_t>(f.size, offset + size);
  return 0;
}

int truncate(sqfs_file_t* file, sqfs_u64 size) {
  WindowFile& f = window_of(file);
  if (::ftruncate(f.fd, static_cast<off_t>(f.offset + size)) != 0) return SQFS_ERROR_IO;
  f.size = size;
  return 0;
}

void destroy(sqfs_object_t* object) { delete &window_of(reinterpret_cast<sqfs_file_t*>(object)); }

}  // namespace

sqfs_file_t* open_offset_file(int fd, std::uint64_t base_offset) {
  auto file = std::make_unique<WindowFile>();
  squashfs::open_window(*file, fd, base_offset, 0);
  file->base.base.destroy = destroy;
  file->base.write_at = write_at;
  file->base.truncate = truncate;
  return &file.release()->base;
}

}  // namespace capsa::convert
