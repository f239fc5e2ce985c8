#include "convert/offset_file.hpp"

#include <sqfs/error.h>
#include <sqfs/io.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <new>
#include <type_traits>

namespace capsa::convert {
namespace {

struct OffsetFile {
  sqfs_file_t base;  // first member: libsquashfs hands &base back to the callbacks
  int fd = -1;
  std::uint64_t base_offset = 0;
  std::uint64_t size = 0;  // bytes of the image, relative to base_offset
};
static_assert(std::is_standard_layout_v<OffsetFile>);

OffsetFile& of(sqfs_file_t* file) { return *reinterpret_cast<OffsetFile*>(file); }
const OffsetFile& of(const sqfs_file_t* file) { return *reinterpret_cast<const OffsetFile*>(file); }

int read_at(sqfs_file_t* file, sqfs_u64 offset, void* buffer, size_t size) {
  OffsetFile& f = of(file);
  if (offset > f.size || size > f.size - offset) return SQFS_ERROR_OUT_OF_BOUNDS;
  auto* out = static_cast<char*>(buffer);
  while (size > 0) {
    ssize_t n = ::pread(f.fd, out, size, static_cast<off_t>(f.base_offset + offset));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return SQFS_ERROR_IO;
    if (n == 0) return SQFS_ERROR_OUT_OF_BOUNDS;
    out += n;
    offset += static_cast<sqfs_u64>(n);
    size -= static_cast<size_t>(n);
  }
  return 0;
}

int write_at(sqfs_file_t* file, sqfs_u64 offset, const void* buffer, size_t size) {
  OffsetFile& f = of(file);
  const auto* in = static_cast<const char*>(buffer);
  sqfs_u64 at = offset;
  for (size_t left = size; left > 0;) {
    ssize_t n = ::pwrite(f.fd, in, left, static_cast<off_t>(f.base_offset + at));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return SQFS_ERROR_IO;
    in += n;
    at += static_cast<sqfs_u64>(n);
    left -= static_cast<size_t>(n);
  }
  f.size = std::max<std::uint64_t>(f.size, offset + size);
  return 0;
}

sqfs_u64 get_size(const sqfs_file_t* file) { return of(file).size; }

int truncate(sqfs_file_t* file, sqfs_u64 size) {
  OffsetFile& f = of(file);
  if (::ftruncate(f.fd, static_cast<off_t>(f.base_offset + size)) != 0) return SQFS_ERROR_IO;
  f.size = size;
  return 0;
}

void destroy(sqfs_object_t* object) { delete reinterpret_cast<OffsetFile*>(object); }

}  // namespace

sqfs_file_t* open_offset_file(int fd, std::uint64_t base_offset) {
  auto* file = new OffsetFile{};
  file->base.base.destroy = destroy;
  file->base.base.copy = nullptr;  // libsquashfs never copies an output file
  file->base.read_at = read_at;
  file->base.write_at = write_at;
  file->base.get_size = get_size;
  file->base.truncate = truncate;
  file->fd = fd;
  file->base_offset = base_offset;
  return &file->base;
}

}  // namespace capsa::convert
