#include "squashfs/image.hpp"

#include <sqfs/error.h>
#include <sqfs/inode.h>
#include <sqfs/meta_reader.h>
#include <sys/types.h>

#include <limits>
#include <new>
#include <utility>

#include "squashfs/gzip_decompressor.hpp"
#include "squashfs/inode_bounds.hpp"
#include "squashfs/zstd_decompressor.hpp"

namespace capsa::squashfs {
namespace {

const char* describe(int code) {
  switch (code) {
    case SQFS_ERROR_ALLOC:
      return "out of memory (corrupt size field?)";
    case SQFS_ERROR_IO:
      return "read error";
    case SQFS_ERROR_COMPRESSOR:
      return "cannot decompress (corrupt data)";
    case SQFS_ERROR_CORRUPTED:
      return "corrupt data";
    case SQFS_ERROR_UNSUPPORTED:
      return "unsupported feature";
    case SQFS_ERROR_OVERFLOW:
      return "size overflow (corrupt data)";
    case SQFS_ERROR_OUT_OF_BOUNDS:
      return "reference past the end of the image (truncated or corrupt)";
    case SFQS_ERROR_SUPER_MAGIC:
      return "bad magic, not a squashfs image";
    case SFQS_ERROR_SUPER_VERSION:
      return "unsupported squashfs version (only 4.0 is supported)";
    case SQFS_ERROR_SUPER_BLOCK_SIZE:
      return "invalid block size";
    case SQFS_ERROR_NOT_DIR:
      return "not a directory";
    case SQFS_ERROR_NO_ENTRY:
      return "no such entry";
    case SQFS_ERROR_LINK_LOOP:
      return "link loop";
    case SQFS_ERROR_NOT_FILE:
      return "not a regular file";
    case SQFS_ERROR_SEQUENCE:
      return "internal sequence error";
    default:
      return "libsquashfs error";
  }
}

}  // namespace

Image::Image(int fd, std::uint64_t offset, std::uint64_t size, std::string label) : label_(std::move(label)) {
  if (offset > static_cast<std::uint64_t>(std::numeric_limits<off_t>::max()) ||
      size > static_cast<std::uint64_t>(std::numeric_limits<off_t>::max()) - offset)
    throw FormatError(label_ + ": squashfs image lies beyond the largest file offset");
  open_window(window_, fd, offset, size);
  open();
}

Image::Image(UniqueFd fd, std::uint64_t offset, std::uint64_t size, std::string label)
    : Image(fd.get(), offset, size, std::move(label)) {
  owned_fd_ = std::move(fd);
}

void Image::open() {
  const std::uint64_t size = window_.size;
  if (size < sizeof(sqfs_super_t))
    throw FormatError(label_ + ": " + std::to_string(size) + " bytes is too small for a squashfs image");
  check(sqfs_super_read(&super_, file()), "squashfs super block");
  if (super_.bytes_used > size)
    throw FormatError(label_ + ": squashfs image is truncated (super block says " + std::to_string(super_.bytes_used) +
                      " bytes, only " + std::to_string(size) + " present)");
  // libsquashfs sizes the fragment table from this count before reading it; the
  // table's index must fit in the image, which bounds that allocation.
  std::uint64_t index_bytes = (std::uint64_t{super_.fragment_entry_count} + 511) / 512 * 8;
  if (!(super_.flags & SQFS_FLAG_NO_FRAGMENTS) && super_.fragment_entry_count != 0 && index_bytes > super_.bytes_used)
    throw FormatError(label_ + ": squashfs fragment count " + std::to_string(super_.fragment_entry_count) +
                      " does not fit in the image");
  check(sqfs_compressor_config_init(&decompressor_config_, static_cast<SQFS_COMPRESSOR>(super_.compression_id),
                                    super_.block_size, SQFS_COMP_FLAG_UNCOMPRESS),
        "squashfs compressor settings");
}

CompressorPtr Image::make_decompressor() const {
  if (super_.compression_id == SQFS_COMP_ZSTD) return make_zstd_decompressor(super_.block_size);
  if (super_.compression_id == SQFS_COMP_GZIP) return make_gzip_decompressor(super_.block_size);
  sqfs_compressor_t* raw = nullptr;
  int ret = sqfs_compressor_create(&decompressor_config_, &raw);
  if (ret == SQFS_ERROR_UNSUPPORTED) {
    const char* name = sqfs_compressor_name_from_id(static_cast<SQFS_COMPRESSOR>(super_.compression_id));
    throw FormatError(label_ + ": squashfs compressor " + (name ? name : std::to_string(super_.compression_id)) +
                      " is not supported");
  }
  check(ret, "squashfs compressor");
  CompressorPtr decompressor(raw);
  if (super_.flags & SQFS_FLAG_COMPRESSOR_OPTIONS)
    check(decompressor->read_options(decompressor.get(), file()), "squashfs compressor options");
  return decompressor;
}

MetaReaderPtr Image::inode_table(sqfs_compressor_t* decompressor) const {
  MetaReaderPtr reader(
      sqfs_meta_reader_create(file(), decompressor, super_.inode_table_start, super_.directory_table_start));
  if (!reader) throw std::bad_alloc();
  return reader;
}

MetaReaderPtr Image::directory_table(sqfs_compressor_t* decompressor) const {
  MetaReaderPtr reader(sqfs_meta_reader_create(file(), decompressor, super_.directory_table_start, super_.bytes_used));
  if (!reader) throw std::bad_alloc();
  return reader;
}

InodePtr Image::read_inode(sqfs_meta_reader_t* inodes, std::uint64_t ref, const std::string& path) const {
  if (auto refused = oversized_inode(inodes, super_, ref))
    throw FormatError(label_ + ": " + path + ": " + *refused + " (a damaged or hostile image)");
  sqfs_inode_generic_t* raw = nullptr;
  int ret = sqfs_meta_reader_read_inode(inodes, &super_, ref >> 16, ref & 0xffff, &raw);
  // Ours only on success: on some errors the library frees the inode it had allocated
  // but leaves the pointer set (a double free, found by fuzz_unpack).
  if (ret < 0) fail(path + ": reading inode", ret);  // the message is only built on failure
  return InodePtr(raw);
}

void Image::fail(const std::string& what, int code) const {
  int read_errno = window_.read_errno.load(std::memory_order_relaxed);
  if (code == SQFS_ERROR_IO && read_errno != 0) throw SystemError(label_ + ": " + what, read_errno);
  throw ImageError(label_ + ": " + what + ": " + describe(code), code);
}

}  // namespace capsa::squashfs
