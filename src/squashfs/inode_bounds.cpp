#include "squashfs/inode_bounds.hpp"

#include <sqfs/inode.h>

#include <array>

namespace capsa::squashfs {
namespace {

// Squashfs is little-endian on disk.
std::uint64_t little_endian(const std::uint8_t* bytes, int width) {
  std::uint64_t value = 0;
  for (int i = width - 1; i >= 0; --i) value = value << 8 | bytes[i];
  return value;
}

}  // namespace

std::optional<std::string> oversized_inode(sqfs_meta_reader_t* inodes, const sqfs_super_t& super, std::uint64_t ref) {
  if (sqfs_meta_reader_seek(inodes, super.inode_table_start + (ref >> 16), ref & 0xffff) != 0) return std::nullopt;
  std::array<std::uint8_t, 16> base{};  // type, mode, uid, gid, mtime, inode number
  if (sqfs_meta_reader_read(inodes, base.data(), base.size()) != 0) return std::nullopt;
  const auto type = static_cast<std::uint16_t>(little_endian(base.data(), 2));
  if (type == SQFS_INODE_EXT_FILE) {
    // blocks_start (8), file_size (8), then the rest.
    std::array<std::uint8_t, 16> fields{};
    if (sqfs_meta_reader_read(inodes, fields.data(), fields.size()) != 0) return std::nullopt;
    const std::uint64_t size = little_endian(fields.data() + 8, 8);
    const std::uint64_t block = super.block_size == 0 ? 4096 : super.block_size;
    const std::uint64_t blocks = size / block + 1;
    if (blocks > kMaxBlockListBytes / 4)
      return "a file inode claims " + std::to_string(size) + " bytes, more than capsa reads from an image";
  } else if (type == SQFS_INODE_SLINK || type == SQFS_INODE_EXT_SLINK) {
    std::array<std::uint8_t, 8> fields{};  // link count, target size
    if (sqfs_meta_reader_read(inodes, fields.data(), fields.size()) != 0) return std::nullopt;
    const std::uint64_t target = little_endian(fields.data() + 4, 4);
    if (target > kMaxSymlinkTarget) return "a symbolic link inode claims a " + std::to_string(target) + "-byte target";
  }
  return std::nullopt;
}

}  // namespace capsa::squashfs
