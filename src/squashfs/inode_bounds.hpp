#pragma once
// libsquashfs sizes the memory for an inode from the inode's own fields before checking
// them against anything: an extended file inode claiming a file of petabytes makes it
// allocate a block list of gigabytes (found by fuzz_squashfs: a 3.7 GB calloc from a
// 4 KiB image). Those fields are read raw here first, and an inode that asks for more
// than any real image needs is refused before libsquashfs sees it.
#include <sqfs/meta_reader.h>
#include <sqfs/super.h>

#include <cstdint>
#include <optional>
#include <string>

namespace capsa::squashfs {

// Above this a file's block list is refused: 64 MiB of sizes is a 2 TiB file at 128 KiB
// blocks, 64 GiB at the smallest (4 KiB).
inline constexpr std::uint64_t kMaxBlockListBytes = 64u << 20;
// Linux refuses symlink targets over PATH_MAX (4096) anyway.
inline constexpr std::uint32_t kMaxSymlinkTarget = 65535;

// Why the inode at `ref` (block << 16 | offset in the inode table) must not be read, or
// nullopt when it may be (also when its bytes cannot be read here: libsquashfs then
// reports that itself). `inodes` is a meta data reader over the inode table; it is
// moved.
std::optional<std::string> oversized_inode(sqfs_meta_reader_t* inodes, const sqfs_super_t& super, std::uint64_t ref);

}  // namespace capsa::squashfs
