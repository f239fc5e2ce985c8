#pragma once
// An ext2/ext3 file system inside a file (an overlay image, or a SIF's overlay partition
// at an offset), opened with libext2fs and changed one operation at a time, addressed by
// inode number: what capsa's FUSE server (ext3/fuse_server.hpp) serves.
//
// Why capsa has this instead of Debian's fuse2fs: fuse2fs speaks libfuse's high-level
// API, so every request names a path that it resolves from the root, component by
// component; and it answers readdir without d_type and refuses RENAME_WHITEOUT, so the
// kernel's overlayfs refuses it as a writable layer ("upper fs missing required
// features") and fuse-overlayfs had to be stacked on top. Here the kernel's node ids are
// inode numbers, directories list their entries' types, and rename takes the flags
// overlayfs uses.
//
// Not thread-safe (neither is libext2fs): one request at a time. Bitmaps, group
// descriptors and the super block are written back on flush() and close(), not after
// every operation; file data and inodes go to the image file as they change (through
// the kernel's page cache: libext2fs's unix I/O manager writes with pwrite).
#include <sys/stat.h>

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

struct struct_ext2_filsys;

namespace capsa::ext3 {

using Ino = std::uint32_t;
constexpr Ino kRootIno = 2;  // EXT2_ROOT_INO

// Thrown by an operation and answered with this errno; the file system stays consistent.
struct Errno {
  int value;
};

struct DirEntry {
  std::string name;
  Ino ino;
  mode_t type;  // S_IFDIR, S_IFREG, ...: what readdir's d_type says
};

// Who asks for a new inode: its owner.
struct Caller {
  uid_t uid = 0;
  gid_t gid = 0;
};

class Volume {
 public:
  // Opens the file system at `offset` of `path`, read-write when `writable`. Throws
  // capsa::Error naming `label` (the overlay, as the user gave it) for an image that is
  // no ext2/3/4 file system, one with a journal to replay, or one with a feature this
  // code cannot write safely (or read, for a read-only one).
  Volume(const std::string& path, std::uint64_t offset, bool writable, const std::string& label);
  // Without close(): forgets the file system without writing anything (a parent that
  // opened it to check it before its server forked).
  ~Volume();
  Volume(const Volume&) = delete;
  Volume& operator=(const Volume&) = delete;

  bool writable() const { return writable_; }
  // Marks the file system as in use (not cleanly unmounted) on disk, and reads the
  // bitmaps: a server dying before close() leaves it for e2fsck.
  void start_writing();
  // Writes back everything libext2fs holds (bitmaps, descriptors, super block) and syncs.
  void flush();
  // Frees the inodes of files removed while still in use, marks the file system clean
  // and closes it. Nothing works after it.
  void close();

  struct stat attributes(Ino ino);
  std::uint32_t generation(Ino ino);
  // The child's inode; Errno ENOENT when there is none.
  Ino lookup(Ino dir, std::string_view name);
  // The same, 0 when there is none (no exception: most lookups before a create miss).
  Ino find(Ino dir, std::string_view name);
  std::vector<DirEntry> list(Ino dir);
  std::string read_link(Ino ino);

  // Each returns the new inode.
  Ino make_node(Ino dir, std::string_view name, mode_t mode, dev_t rdev, const Caller& who);
  Ino make_directory(Ino dir, std::string_view name, mode_t mode, const Caller& who);
  Ino make_symlink(Ino dir, std::string_view name, const std::string& target, const Caller& who);
  void link(Ino ino, Ino dir, std::string_view name);
  void unlink(Ino dir, std::string_view name);
  void remove_directory(Ino dir, std::string_view name);
  // flags: RENAME_NOREPLACE, RENAME_EXCHANGE, RENAME_WHITEOUT (a whiteout owned by `who`
  // takes the old name).
  void rename(Ino from_dir, std::string_view from, Ino to_dir, std::string_view to, unsigned flags, const Caller& who);

  struct Change {
    bool mode = false, uid = false, gid = false, size = false, atime = false, mtime = false, ctime = false;
    mode_t new_mode = 0;
    uid_t new_uid = 0;
    gid_t new_gid = 0;
    std::uint64_t new_size = 0;
    timespec new_atime{}, new_mtime{}, new_ctime{};  // UTIME_NOW: the current time
  };
  void change(Ino ino, const Change& c);

  std::size_t read(Ino ino, std::uint64_t offset, char* buffer, std::size_t size);
  std::size_t write(Ino ino, std::uint64_t offset, const char* data, std::size_t size);
  // Allocates [offset, offset+length) (mode 0 or FALLOC_FL_KEEP_SIZE).
  void allocate(Ino ino, int mode, std::uint64_t offset, std::uint64_t length);

  // Extended attributes: full names ("user.overlay.opaque").
  std::string get_xattr(Ino ino, const std::string& name);
  // The same, false (not Errno ENODATA) when it has no such attribute.
  bool find_xattr(Ino ino, const std::string& name, std::string& value);
  std::vector<std::string> list_xattrs(Ino ino);
  void set_xattr(Ino ino, const std::string& name, std::string_view value, int flags);
  void remove_xattr(Ino ino, const std::string& name);

  struct Usage {
    std::uint64_t block_size, blocks, free_blocks, available_blocks, inodes, free_inodes;
  };
  Usage usage();

  // The kernel's references to inodes (FUSE lookup counts): an inode whose last link
  // goes while the kernel still knows it is freed when it forgets it (an open file that
  // was removed stays readable).
  void remember(Ino ino);
  void forget(Ino ino, std::uint64_t count);
  // Open files: the data of a removed file goes when the last one closes, even while the
  // kernel still knows the inode (its number is reused only once the kernel forgets it).
  void opened(Ino ino);
  void closed(Ino ino);

 private:
  struct Inode;
  Inode read_inode(Ino ino);
  void write_inode(Ino ino, Inode& inode);
  Ino new_inode(Ino dir, mode_t mode, const Caller& who, Inode& made);
  void add_entry(Ino dir, std::string_view name, Ino ino, mode_t type);
  void set_entry(Ino dir, std::string_view name, Ino ino, mode_t type);
  void drop_link(Ino ino);
  void release(Ino ino);
  void free_data(Ino ino);
  bool directory_empty(Ino dir);
  void touch_directory(Ino dir, int links_delta);
  void check_name(std::string_view name) const;
  void require_writable() const;

  struct_ext2_filsys* fs_ = nullptr;
  bool writable_;
  bool writing_ = false;
  std::string label_;
  std::unordered_map<Ino, std::uint64_t> lookups_;
  std::unordered_map<Ino, std::uint64_t> opens_;
  std::unordered_set<Ino> unlinked_;  // no links left, still known to the kernel
};

}  // namespace capsa::ext3
