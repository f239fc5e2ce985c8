#include "archive/decompress.hpp"

#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>

#include <array>
#include <cerrno>
#include <fstream>
#include <memory>
#include <new>

#include "archive/archive_reader.hpp"
#include "util/error.hpp"
#include "util/fd.hpp"

namespace capsa::archive {
namespace {

}  // namespace

bool is_compressed_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::array<unsigned char, 6> head{};
  in.read(reinterpret_cast<char*>(head.data()), head.size());
  if (in.gcount() < 6) return false;
  const bool gzip = head[0] == 0x1f && head[1] == 0x8b;
  const bool zstd = head[0] == 0x28 && head[1] == 0xb5 && head[2] == 0x2f && head[3] == 0xfd;
  const bool xz =
      head[0] == 0xfd && head[1] == '7' && head[2] == 'z' && head[3] == 'X' && head[4] == 'Z' && head[5] == 0;
  return gzip || zstd || xz;
}

void decompress_file(const std::string& path, const std::string& output) {
  ArchiveReader a = new_archive_reader();
  // Built-in decompressors only: never a filter that runs an external program.
  archive_read_support_filter_gzip(a.get());
  archive_read_support_filter_zstd(a.get());
  archive_read_support_filter_xz(a.get());
  archive_read_support_format_raw(a.get());
  archive_entry* entry = nullptr;
  if (archive_read_open_filename(a.get(), path.c_str(), 1 << 20) != ARCHIVE_OK ||
      archive_read_next_header(a.get(), &entry) != ARCHIVE_OK) {
    const char* message = archive_error_string(a.get());
    throw FormatError(path + ": " + (message ? message : "cannot decompress"));
  }
  UniqueFd out(::open(output.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
  if (!out) throw_errno("creating " + output);
  for (;;) {
    const void* block = nullptr;
    std::size_t size = 0;
    la_int64_t offset = 0;
    const int ret = archive_read_data_block(a.get(), &block, &size, &offset);
    if (ret == ARCHIVE_EOF) break;
    if (ret < ARCHIVE_WARN) {
      const char* message = archive_error_string(a.get());
      throw FormatError(path + ": " + (message ? message : "decompression failed") +
                        " (compressed data corrupt or truncated)");
    }
    write_all(out.get(), std::span(static_cast<const std::uint8_t*>(block), size));
  }
}

}  // namespace capsa::archive
