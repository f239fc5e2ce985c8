#include "squashfs/directory_entries.hpp"

#include <sqfs/dir.h>

#include <memory>

#include "squashfs/sqfs_handles.hpp"
#include "util/error.hpp"

namespace capsa::squashfs {

bool is_entry_name(std::string_view name) {
  return !name.empty() && name != "." && name != ".." && name.find_first_of(std::string_view("/\0", 2)) == name.npos;
}

DirectoryEntries::DirectoryEntries(const Image& image, sqfs_meta_reader_t* directories, const sqfs_inode_generic_t& dir,
                                   const std::string& path)
    : image_(image), directories_(directories), path_(path) {
  int ret = sqfs_readdir_state_init(&state_, &image.super(), &dir);
  if (ret < 0) image.fail(path + ": reading directory", ret);
}

bool DirectoryEntries::next(DirectoryEntry& entry) {
  sqfs_dir_entry_t* raw = nullptr;
  sqfs_u32 inode_number = 0;
  sqfs_u64 ref = 0;
  int ret = sqfs_meta_reader_readdir(directories_, &state_, &raw, &inode_number, &ref);
  std::unique_ptr<sqfs_dir_entry_t, FreeBuffer> stored(raw);
  if (ret > 0) return false;
  if (ret < 0) image_.fail(path_ + ": reading directory", ret);
  entry.name.assign(reinterpret_cast<const char*>(stored->name), std::size_t{stored->size} + 1);
  if (!is_entry_name(entry.name)) throw FormatError(image_.label() + ": " + path_ + ": hostile directory entry name");
  if (++count_ > kMaxEntries)
    throw FormatError(image_.label() + ": " + path_ + ": more than " + std::to_string(kMaxEntries) +
                      " directory entries");
  entry.ref = ref;
  entry.inode_number = inode_number;
  entry.type = stored->type;
  return true;
}

}  // namespace capsa::squashfs
