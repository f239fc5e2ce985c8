#pragma once
// The entries of one squashfs directory as stored, with the checks every reader of a
// hostile image needs: names are single path components, and a listing cannot grow
// without bound. The Reader (reader.hpp) and the FUSE server (fuse_server.hpp) both list
// directories through this, with meta data readers of their own rather than
// libsquashfs's directory reader, which hides the inode references that the bounds check
// (inode_bounds.hpp) needs before each inode is read.

#include <sqfs/meta_reader.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "squashfs/image.hpp"

namespace capsa::squashfs {

// True when `name` may name an entry of a directory: not "", "." or "..", and no '/' or
// NUL. An image must not smuggle a path or a way up into a listing.
bool is_entry_name(std::string_view name);

struct DirectoryEntry {
  std::string name;
  std::uint64_t ref = 0;  // of its inode: block << 16 | offset in the inode table
  std::uint32_t inode_number = 0;
  std::uint16_t type = 0;  // SQFS_INODE_* (listings store the basic types)
};

class DirectoryEntries {
 public:
  // Far beyond any real directory; stops a crafted listing from exhausting memory.
  static constexpr std::size_t kMaxEntries = std::size_t{1} << 21;

  // The entries of the directory inode `dir` of `image`, read with `directories` (a
  // reader from Image::directory_table(), moved by each call). `path` names the
  // directory in messages; it and the others must outlive this object.
  DirectoryEntries(const Image& image, sqfs_meta_reader_t* directories, const sqfs_inode_generic_t& dir,
                   const std::string& path);

  // The next entry, in stored (bytewise) order, into `entry`; false after the last.
  // Throws ImageError for a corrupt listing, FormatError for a name that is not an entry
  // name or more than kMaxEntries entries.
  bool next(DirectoryEntry& entry);

 private:
  const Image& image_;
  sqfs_meta_reader_t* directories_;
  const std::string& path_;
  sqfs_readdir_state_t state_{};
  std::size_t count_ = 0;
};

}  // namespace capsa::squashfs
