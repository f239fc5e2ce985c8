// The ext2/ext3 operations capsa's FUSE server needs, on libext2fs, by inode number (see
// volume.hpp for why capsa serves ext3 overlays itself instead of running fuse2fs: its
// path walks per request, and no d_type or RENAME_WHITEOUT for the kernel's overlayfs).
#include "ext3/volume.hpp"

#include <ext2fs/ext2fs.h>
#include <linux/fs.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <time.h>

// libe2p's header declares its functions without extern "C".
extern "C" {
#include <e2p/e2p.h>
}

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <random>

#include "util/error.hpp"

namespace capsa::ext3 {
namespace {

// The features this code keeps consistent when it writes: libext2fs maintains them
// itself (checksums, 64-bit and flexible group layouts, extents, large directories). The
// rest (quota files, inline data, case folding, encryption, multi-mount protection,
// bigalloc clusters, ...) would need work libext2fs leaves to its caller.
constexpr std::uint32_t kWritableIncompat = EXT2_FEATURE_INCOMPAT_FILETYPE | EXT3_FEATURE_INCOMPAT_EXTENTS |
                                            EXT4_FEATURE_INCOMPAT_64BIT | EXT4_FEATURE_INCOMPAT_FLEX_BG |
                                            EXT2_FEATURE_INCOMPAT_META_BG | EXT4_FEATURE_INCOMPAT_CSUM_SEED |
                                            EXT4_FEATURE_INCOMPAT_LARGEDIR;
constexpr std::uint32_t kWritableRoCompat = EXT2_FEATURE_RO_COMPAT_SPARSE_SUPER | EXT2_FEATURE_RO_COMPAT_LARGE_FILE |
                                            EXT4_FEATURE_RO_COMPAT_HUGE_FILE | EXT4_FEATURE_RO_COMPAT_GDT_CSUM |
                                            EXT4_FEATURE_RO_COMPAT_DIR_NLINK | EXT4_FEATURE_RO_COMPAT_EXTRA_ISIZE |
                                            EXT4_FEATURE_RO_COMPAT_METADATA_CSUM;
// Read-only, a journal left to replay is not replayed (the kernel's "noload"): what the
// file system holds is read as it is. Anything that changes how names, data or inodes
// are found cannot be read without support for it.
constexpr std::uint32_t kReadableIncompat = kWritableIncompat | EXT3_FEATURE_INCOMPAT_RECOVER;

int errno_of(errcode_t code) {
  if (code > 0 && code < 256) return static_cast<int>(code);  // libext2fs passes errno values on
  switch (code) {
    case EXT2_ET_BLOCK_ALLOC_FAIL:
    case EXT2_ET_INODE_ALLOC_FAIL:
    case EXT2_ET_DIR_NO_SPACE:
    case EXT2_ET_EA_NO_SPACE:
    case EXT2_ET_DIR_NO_SPACE_FOR_CSUM:
      return ENOSPC;
    case EXT2_ET_NO_MEMORY:
      return ENOMEM;
    case EXT2_ET_RO_FILSYS:
      return EROFS;
    case EXT2_ET_FILE_NOT_FOUND:
      return ENOENT;
    case EXT2_ET_DIR_EXISTS:
    case EXT2_ET_FILE_EXISTS:
      return EEXIST;
    case EXT2_ET_NO_DIRECTORY:
      return ENOTDIR;
    case EXT2_ET_EA_KEY_NOT_FOUND:
      return ENODATA;
    case EXT2_ET_MISSING_EA_FEATURE:
      return ENOTSUP;
    case EXT2_ET_FILE_TOO_BIG:
    case EXT2_ET_EA_BAD_VALUE_SIZE:
      return EFBIG;
    case EXT2_ET_INVALID_ARGUMENT:
      return EINVAL;
    default:
      return EIO;
  }
}

void check(errcode_t code) {
  if (code != 0) throw Errno{errno_of(code)};
}

int file_type_of(mode_t mode) {
  switch (mode & S_IFMT) {
    case S_IFREG:
      return EXT2_FT_REG_FILE;
    case S_IFDIR:
      return EXT2_FT_DIR;
    case S_IFLNK:
      return EXT2_FT_SYMLINK;
    case S_IFCHR:
      return EXT2_FT_CHRDEV;
    case S_IFBLK:
      return EXT2_FT_BLKDEV;
    case S_IFIFO:
      return EXT2_FT_FIFO;
    case S_IFSOCK:
      return EXT2_FT_SOCK;
    default:
      return EXT2_FT_UNKNOWN;
  }
}

mode_t mode_of_file_type(int type) {
  switch (type) {
    case EXT2_FT_REG_FILE:
      return S_IFREG;
    case EXT2_FT_DIR:
      return S_IFDIR;
    case EXT2_FT_SYMLINK:
      return S_IFLNK;
    case EXT2_FT_CHRDEV:
      return S_IFCHR;
    case EXT2_FT_BLKDEV:
      return S_IFBLK;
    case EXT2_FT_FIFO:
      return S_IFIFO;
    case EXT2_FT_SOCK:
      return S_IFSOCK;
    default:
      return 0;
  }
}

timespec now() {
  timespec t{};
  ::clock_gettime(CLOCK_REALTIME, &t);
  return t;
}

// The name of the lowest feature bit in `mask`, as mke2fs and tune2fs spell it.
std::string feature_name(int kind, std::uint32_t mask) {
  for (unsigned bit = 0; bit < 32; ++bit)
    if (mask & (1u << bit)) return e2p_feature2string(kind, 1u << bit);
  return "?";
}

}  // namespace

struct Volume::Inode {
  ext2_inode_large raw{};
  ext2_inode* small() { return reinterpret_cast<ext2_inode*>(&raw); }
  mode_t mode() const { return raw.i_mode; }
  bool is_dir() const { return LINUX_S_ISDIR(raw.i_mode); }
};

namespace {

// Nanoseconds and the years past 2038 live in the large inode's *_extra fields, when the
// inode has room for them (i_extra_isize).
bool has_extra(const ext2_inode_large& raw, std::size_t field_end, unsigned inode_size) {
  return inode_size > EXT2_GOOD_OLD_INODE_SIZE &&
         EXT2_GOOD_OLD_INODE_SIZE + static_cast<std::size_t>(raw.i_extra_isize) >= field_end;
}

timespec decode_time(std::uint32_t seconds, const std::uint32_t* extra) {
  timespec t{};
  t.tv_sec = static_cast<std::int32_t>(seconds);
  if (extra != nullptr) {
    t.tv_sec += static_cast<std::int64_t>(*extra & 3) << 32;
    t.tv_nsec = *extra >> 2;
  }
  return t;
}

void encode_time(const timespec& t, std::uint32_t& seconds, std::uint32_t* extra) {
  seconds = static_cast<std::uint32_t>(t.tv_sec);
  if (extra != nullptr)
    *extra = static_cast<std::uint32_t>(((t.tv_sec - static_cast<std::int32_t>(t.tv_sec)) >> 32) & 3) |
             static_cast<std::uint32_t>(t.tv_nsec << 2);
}

// The large inode's extra field `field`, or nullptr when the inode has no room for it.
template <typename Raw>
auto extra_field(Raw& raw, std::uint32_t ext2_inode_large::*field, unsigned inode_size) -> decltype(&(raw.*field)) {
  auto* start = reinterpret_cast<const char*>(&raw);
  const auto end =
      static_cast<std::size_t>(reinterpret_cast<const char*>(&(raw.*field)) - start) + sizeof(std::uint32_t);
  return has_extra(raw, end, inode_size) ? &(raw.*field) : nullptr;
}

void set_times(ext2_inode_large& raw, unsigned size, const timespec* atime, const timespec* mtime,
               const timespec* ctime) {
  if (atime) encode_time(*atime, raw.i_atime, extra_field(raw, &ext2_inode_large::i_atime_extra, size));
  if (mtime) encode_time(*mtime, raw.i_mtime, extra_field(raw, &ext2_inode_large::i_mtime_extra, size));
  if (ctime) encode_time(*ctime, raw.i_ctime, extra_field(raw, &ext2_inode_large::i_ctime_extra, size));
}

void set_owner(ext2_inode_large& raw, uid_t uid, gid_t gid) {
  raw.i_uid = static_cast<std::uint16_t>(uid & 0xffff);
  raw.osd2.linux2.l_i_uid_high = static_cast<std::uint16_t>(uid >> 16);
  raw.i_gid = static_cast<std::uint16_t>(gid & 0xffff);
  raw.osd2.linux2.l_i_gid_high = static_cast<std::uint16_t>(gid >> 16);
}

// Device numbers as Linux's ext2 keeps them in i_block: the old 8:8 encoding when it
// fits, the new one otherwise.
dev_t decode_device(const ext2_inode_large& raw) {
  if (raw.i_block[0] != 0) return makedev((raw.i_block[0] >> 8) & 0xff, raw.i_block[0] & 0xff);
  std::uint32_t d = raw.i_block[1];
  return makedev((d & 0xfff00) >> 8, (d & 0xff) | ((d >> 12) & 0xfff00));
}

void encode_device(ext2_inode_large& raw, dev_t dev) {
  unsigned major = ::major(dev), minor = ::minor(dev);
  if (major < 256 && minor < 256) {
    raw.i_block[0] = (major << 8) | minor;
    raw.i_block[1] = 0;
  } else {
    raw.i_block[0] = 0;
    raw.i_block[1] = (minor & 0xff) | (major << 8) | ((minor & ~0xffu) << 12);
  }
}

// An open ext2_file_t, closed (and its buffer written) on every path.
class OpenFile {
 public:
  OpenFile(ext2_filsys fs, Ino ino, int flags) { check(ext2fs_file_open2(fs, ino, nullptr, flags, &file_)); }
  ~OpenFile() {
    if (file_ != nullptr) ext2fs_file_close(file_);
  }
  OpenFile(const OpenFile&) = delete;
  OpenFile& operator=(const OpenFile&) = delete;
  ext2_file_t get() const { return file_; }
  void close() {
    ext2_file_t file = file_;
    file_ = nullptr;
    check(ext2fs_file_close(file));
  }

 private:
  ext2_file_t file_ = nullptr;
};

class Xattrs {
 public:
  Xattrs(ext2_filsys fs, Ino ino) {
    check(ext2fs_xattrs_open(fs, ino, &handle_));
    check(ext2fs_xattrs_read(handle_));
  }
  ~Xattrs() { ext2fs_xattrs_close(&handle_); }
  Xattrs(const Xattrs&) = delete;
  Xattrs& operator=(const Xattrs&) = delete;
  ext2_xattr_handle* get() const { return handle_; }
  // The value, or nothing (errno ENODATA) when there is no such attribute.
  bool find(const std::string& name, std::string& value) const {
    void* data = nullptr;
    std::size_t length = 0;
    errcode_t code = ext2fs_xattr_get(handle_, name.c_str(), &data, &length);
    if (code == EXT2_ET_EA_KEY_NOT_FOUND) return false;
    check(code);
    value.assign(static_cast<const char*>(data), length);
    ext2fs_free_mem(&data);
    return true;
  }

 private:
  ext2_xattr_handle* handle_ = nullptr;
};

// Only these namespaces are stored; system.* (POSIX ACLs) is not served.
void check_xattr_name(const std::string& name) {
  for (const char* prefix : {"user.", "trusted.", "security."})
    if (name.rfind(prefix, 0) == 0 && name.size() > std::strlen(prefix)) return;
  throw Errno{EOPNOTSUPP};
}

}  // namespace

Volume::Volume(const std::string& path, std::uint64_t offset, bool writable, const std::string& label)
    : writable_(writable), label_(label) {
  const std::string io_options = offset == 0 ? std::string() : "offset=" + std::to_string(offset);
  int flags = EXT2_FLAG_64BITS | (writable ? EXT2_FLAG_RW : 0);
  ext2_filsys fs = nullptr;
  errcode_t code =
      ext2fs_open2(path.c_str(), io_options.empty() ? nullptr : io_options.c_str(), flags, 0, 0, unix_io_manager, &fs);
  if (code != 0) {
    if (fs != nullptr) ext2fs_free(fs);
    if (code == EXT2_ET_BAD_MAGIC || code == EXT2_ET_SB_CSUM_INVALID || code == EXT2_ET_CORRUPT_SUPERBLOCK)
      throw FormatError("overlay " + label + ": no ext3 file system" +
                        (offset != 0 ? " at offset " + std::to_string(offset) : std::string()) + " (" +
                        error_message(code) + ")");
    if (code > 0 && code < 256) throw SystemError("overlay " + label, static_cast<int>(code));
    throw Error("overlay " + label + ": cannot open its ext3 file system: " + error_message(code));
  }
  fs_ = fs;
  const ext2_super_block& super = *fs->super;
  if (writable && (super.s_feature_incompat & EXT3_FEATURE_INCOMPAT_RECOVER))
    throw Error("overlay " + label + " has a journal to replay: run `e2fsck -fy` on it, or use it read-only (:ro)");
  const std::uint32_t incompat = super.s_feature_incompat & ~(writable ? kWritableIncompat : kReadableIncompat);
  if (incompat != 0)
    throw Error("overlay " + label + ": its file system has the feature " +
                feature_name(E2P_FEATURE_INCOMPAT, incompat) + ", which capsa cannot " + (writable ? "write" : "read") +
                " unprivileged (make it with `capsa overlay create`, or run as root)");
  const std::uint32_t ro_compat = super.s_feature_ro_compat & ~kWritableRoCompat;
  if (writable && ro_compat != 0)
    throw Error("overlay " + label + ": its file system has the feature " +
                feature_name(E2P_FEATURE_RO_INCOMPAT, ro_compat) +
                ", which capsa cannot write unprivileged (use it read-only with :ro, or run as root)");
  // Inodes are read and written several times per request: keep the last few (libext2fs
  // searches its cache one entry after the other, so a large one costs more than it saves;
  // the image file's pages are in the kernel's cache anyway).
  if (fs->icache == nullptr) check(ext2fs_create_inode_cache(fs, 32));
}

Volume::~Volume() {
  if (fs_ != nullptr) ext2fs_free(fs_);
}

void Volume::start_writing() {
  check(ext2fs_read_bitmaps(fs_));
  if (!writable_) return;
  // On disk, the file system is in use until close(): a server that is killed leaves it
  // for e2fsck (runtime/overlay_mount.cpp repairs it before its next use).
  fs_->super->s_state &= ~EXT2_VALID_FS;
  fs_->super->s_mtime = static_cast<std::uint32_t>(now().tv_sec);
  ext2fs_mark_super_dirty(fs_);
  fs_->flags |= EXT2_FLAG_SUPER_ONLY;
  errcode_t code = ext2fs_flush(fs_);
  fs_->flags &= ~EXT2_FLAG_SUPER_ONLY;
  check(code);
  writing_ = true;
}

void Volume::flush() {
  if (!writing_) return;
  ext2fs_mark_super_dirty(fs_);
  check(ext2fs_flush(fs_));
}

void Volume::close() {
  if (fs_ == nullptr) return;
  if (writing_) {
    for (Ino ino : std::vector<Ino>(unlinked_.begin(), unlinked_.end())) {
      try {
        release(ino);
      } catch (const Errno&) {
        // e2fsck finds an unattached inode; everything else is still written back.
      }
    }
    unlinked_.clear();
    fs_->super->s_state |= EXT2_VALID_FS;
    ext2fs_mark_super_dirty(fs_);
  }
  ext2_filsys fs = fs_;
  fs_ = nullptr;
  check(ext2fs_close2(fs, 0));
}

void Volume::require_writable() const {
  if (!writable_) throw Errno{EROFS};
}

void Volume::check_name(std::string_view name) const {
  if (name.size() > EXT2_NAME_LEN) throw Errno{ENAMETOOLONG};
  if (name.empty() || name.find('/') != std::string_view::npos) throw Errno{EINVAL};
}

Volume::Inode Volume::read_inode(Ino ino) {
  if (ino < EXT2_ROOT_INO || ino > fs_->super->s_inodes_count) throw Errno{ESTALE};
  Inode inode;
  check(ext2fs_read_inode_full(fs_, ino, inode.small(), sizeof(inode.raw)));
  return inode;
}

void Volume::write_inode(Ino ino, Inode& inode) {
  check(ext2fs_write_inode_full(fs_, ino, inode.small(), sizeof(inode.raw)));
}

struct stat Volume::attributes(Ino ino) {
  Inode inode = read_inode(ino);
  const ext2_inode_large& raw = inode.raw;
  const unsigned size = EXT2_INODE_SIZE(fs_->super);
  struct stat st {};
  st.st_ino = ino;
  st.st_mode = raw.i_mode;
  st.st_nlink = raw.i_links_count;
  st.st_uid = inode_uid(raw);
  st.st_gid = inode_gid(raw);
  st.st_size = static_cast<off_t>(EXT2_I_SIZE(&raw));
  if (LINUX_S_ISCHR(raw.i_mode) || LINUX_S_ISBLK(raw.i_mode)) st.st_rdev = decode_device(raw);
  st.st_blksize = static_cast<blksize_t>(fs_->blocksize);
  st.st_blocks = static_cast<blkcnt_t>(ext2fs_get_stat_i_blocks(fs_, inode.small()));
  st.st_atim = decode_time(raw.i_atime, extra_field(raw, &ext2_inode_large::i_atime_extra, size));
  st.st_mtim = decode_time(raw.i_mtime, extra_field(raw, &ext2_inode_large::i_mtime_extra, size));
  st.st_ctim = decode_time(raw.i_ctime, extra_field(raw, &ext2_inode_large::i_ctime_extra, size));
  return st;
}

std::uint32_t Volume::generation(Ino ino) { return read_inode(ino).raw.i_generation; }

Ino Volume::lookup(Ino dir, std::string_view name) {
  const Ino found = find(dir, name);
  if (found == 0) throw Errno{ENOENT};
  return found;
}

Ino Volume::find(Ino dir, std::string_view name) {
  if (name.size() > EXT2_NAME_LEN) throw Errno{ENAMETOOLONG};
  ext2_ino_t found = 0;
  const errcode_t code = ext2fs_lookup(fs_, dir, name.data(), static_cast<int>(name.size()), nullptr, &found);
  if (code == EXT2_ET_FILE_NOT_FOUND) return 0;
  check(code);
  return found;
}

namespace {

struct ListState {
  std::vector<DirEntry>* out;
  bool types;  // the file system records entry types (the filetype feature)
};

int list_entry(ext2_ino_t, int, ext2_dir_entry* entry, int, int, char*, void* data) {
  auto* state = static_cast<ListState*>(data);
  if (entry->inode == 0) return 0;
  const int length = ext2fs_dirent_name_len(entry);
  state->out->push_back({std::string(entry->name, static_cast<std::size_t>(length)), entry->inode,
                         state->types ? mode_of_file_type(ext2fs_dirent_file_type(entry)) : 0});
  return 0;
}

}  // namespace

std::vector<DirEntry> Volume::list(Ino dir) {
  if (!read_inode(dir).is_dir()) throw Errno{ENOTDIR};
  std::vector<DirEntry> entries;
  ListState state{&entries, ext2fs_has_feature_filetype(fs_->super) != 0};
  check(ext2fs_dir_iterate2(fs_, dir, 0, nullptr, list_entry, &state));
  for (DirEntry& e : entries)
    if (e.type == 0) e.type = read_inode(e.ino).mode() & S_IFMT;
  return entries;
}

std::string Volume::read_link(Ino ino) {
  Inode inode = read_inode(ino);
  if (!LINUX_S_ISLNK(inode.raw.i_mode)) throw Errno{EINVAL};
  const std::uint64_t size = EXT2_I_SIZE(&inode.raw);
  if (size >= fs_->blocksize) throw Errno{EIO};
  if (!ext2fs_is_fast_symlink(inode.small())) {
    std::string target(size, '\0');
    OpenFile file(fs_, ino, 0);
    unsigned got = 0;
    check(ext2fs_file_read(file.get(), target.data(), static_cast<unsigned>(size), &got));
    target.resize(got);
    return target;
  }
  return std::string(reinterpret_cast<const char*>(inode.raw.i_block), size);
}

// A new inode of type and permissions `mode`, owned by `who` (the group of a set-group-ID
// directory), written and counted as allocated; the caller links it.
Ino Volume::new_inode(Ino dir, mode_t mode, const Caller& who, Inode& made) {
  Inode parent = read_inode(dir);
  ext2_ino_t ino = 0;
  check(ext2fs_new_inode(fs_, dir, static_cast<int>(mode), nullptr, &ino));
  std::memset(&made.raw, 0, sizeof(made.raw));
  gid_t gid = who.gid;
  if (parent.raw.i_mode & S_ISGID) {
    gid = inode_gid(parent.raw);
    if (S_ISDIR(mode)) mode |= S_ISGID;
  }
  made.raw.i_mode = static_cast<std::uint16_t>(mode);
  set_owner(made.raw, who.uid, gid);
  made.raw.i_links_count = 1;
  const unsigned size = EXT2_INODE_SIZE(fs_->super);
  if (size > EXT2_GOOD_OLD_INODE_SIZE)
    made.raw.i_extra_isize =
        static_cast<std::uint16_t>(std::min<unsigned>(sizeof(ext2_inode_large), size) - EXT2_GOOD_OLD_INODE_SIZE);
  static std::mt19937 generations{std::random_device{}()};
  made.raw.i_generation = static_cast<std::uint32_t>(generations());
  const timespec t = now();
  set_times(made.raw, size, &t, &t, &t);
  if (has_extra(made.raw, offsetof(ext2_inode_large, i_crtime_extra) + 4, size))
    encode_time(t, made.raw.i_crtime, &made.raw.i_crtime_extra);
  if (S_ISREG(mode) && ext2fs_has_feature_extents(fs_->super)) made.raw.i_flags |= EXT4_EXTENTS_FL;
  check(ext2fs_write_new_inode(fs_, ino, made.small()));
  // write_new_inode fills in what a new inode has beyond the first 128 bytes only when
  // given a small inode: the large one is written as it is.
  write_inode(ino, made);
  ext2fs_inode_alloc_stats2(fs_, ino, +1, S_ISDIR(mode) ? 1 : 0);
  return ino;
}

void Volume::add_entry(Ino dir, std::string_view name, Ino ino, mode_t type) {
  const std::string n(name);
  errcode_t code = ext2fs_link(fs_, dir, n.c_str(), ino, file_type_of(type));
  if (code == EXT2_ET_DIR_NO_SPACE) {
    check(ext2fs_expand_dir(fs_, dir));
    code = ext2fs_link(fs_, dir, n.c_str(), ino, file_type_of(type));
  }
  check(code);
}

namespace {

struct SetEntryState {
  std::string_view name;
  Ino ino;
  int type;
  bool done;
};

int set_entry_in_place(ext2_ino_t, int, ext2_dir_entry* entry, int, int, char*, void* data) {
  auto* state = static_cast<SetEntryState*>(data);
  if (entry->inode == 0) return 0;
  const auto length = static_cast<std::size_t>(ext2fs_dirent_name_len(entry));
  if (std::string_view(entry->name, length) != state->name) return 0;
  entry->inode = state->ino;
  ext2fs_dirent_set_file_type(entry, state->type);
  state->done = true;
  return DIRENT_CHANGED | DIRENT_ABORT;
}

}  // namespace

// Points the existing entry `name` of `dir` at `ino`.
void Volume::set_entry(Ino dir, std::string_view name, Ino ino, mode_t type) {
  SetEntryState state{name, ino, ext2fs_has_feature_filetype(fs_->super) ? file_type_of(type) : 0, false};
  check(ext2fs_dir_iterate2(fs_, dir, 0, nullptr, set_entry_in_place, &state));
  if (!state.done) throw Errno{EIO};
}

// The directory's times for a change of its entries, and its link count for a
// subdirectory more or less. A directory with more subdirectories than a link count
// holds has the count 1 (dir_nlink) and keeps it.
void Volume::touch_directory(Ino dir, int links_delta) {
  Inode inode = read_inode(dir);
  if (links_delta != 0 && inode.raw.i_links_count != 1) {
    const int links = inode.raw.i_links_count + links_delta;
    inode.raw.i_links_count = static_cast<std::uint16_t>(links >= EXT2_LINK_MAX ? 1 : std::max(links, 2));
  }
  const timespec t = now();
  set_times(inode.raw, EXT2_INODE_SIZE(fs_->super), nullptr, &t, &t);
  write_inode(dir, inode);
}

// Frees an inode that has no links left: its data, its extended attribute block, and
// the inode itself.
void Volume::release(Ino ino) {
  Inode inode = read_inode(ino);
  lookups_.erase(ino);
  opens_.erase(ino);
  unlinked_.erase(ino);
  if (ext2fs_file_acl_block(fs_, inode.small()) != 0) {
    check(ext2fs_free_ext_attr(fs_, ino, &inode.raw));
    inode = read_inode(ino);
  }
  if (ext2fs_inode_has_valid_blocks2(fs_, inode.small())) {
    check(ext2fs_punch(fs_, ino, inode.small(), nullptr, 0, ~0ULL));
    inode = read_inode(ino);
  }
  inode.raw.i_links_count = 0;
  inode.raw.i_size = 0;
  inode.raw.i_size_high = 0;
  inode.raw.i_dtime = static_cast<std::uint32_t>(now().tv_sec);
  write_inode(ino, inode);
  ext2fs_inode_alloc_stats2(fs_, ino, -1, inode.is_dir() ? 1 : 0);
}

// One link fewer (a removed directory has none left); freed at once, or when the kernel
// forgets it.
void Volume::drop_link(Ino ino) {
  Inode inode = read_inode(ino);
  if (inode.is_dir() || inode.raw.i_links_count <= 1)
    inode.raw.i_links_count = 0;
  else
    --inode.raw.i_links_count;
  const timespec t = now();
  set_times(inode.raw, EXT2_INODE_SIZE(fs_->super), nullptr, nullptr, &t);
  write_inode(ino, inode);
  if (inode.raw.i_links_count != 0) return;
  if (lookups_.count(ino) == 0) {
    release(ino);
    return;
  }
  unlinked_.insert(ino);
  if (opens_.count(ino) == 0) free_data(ino);
}

// The blocks of a removed file nobody has open: the space is free at once, not when the
// kernel gets round to forgetting the inode.
void Volume::free_data(Ino ino) {
  Inode inode = read_inode(ino);
  if (inode.is_dir() || !ext2fs_inode_has_valid_blocks2(fs_, inode.small())) return;
  check(ext2fs_punch(fs_, ino, inode.small(), nullptr, 0, ~0ULL));
  inode = read_inode(ino);
  inode.raw.i_size = 0;
  inode.raw.i_size_high = 0;
  write_inode(ino, inode);
}

namespace {

int count_entry(ext2_ino_t, int, ext2_dir_entry* entry, int, int, char*, void* data) {
  if (entry->inode == 0) return 0;
  const int length = ext2fs_dirent_name_len(entry);
  const std::string_view name(entry->name, static_cast<std::size_t>(length));
  if (name == "." || name == "..") return 0;
  *static_cast<bool*>(data) = false;
  return DIRENT_ABORT;
}

}  // namespace

bool Volume::directory_empty(Ino dir) {
  bool empty = true;
  check(ext2fs_dir_iterate2(fs_, dir, 0, nullptr, count_entry, &empty));
  return empty;
}

Ino Volume::make_node(Ino dir, std::string_view name, mode_t mode, dev_t rdev, const Caller& who) {
  require_writable();
  check_name(name);
  if (!S_ISREG(mode) && !S_ISCHR(mode) && !S_ISBLK(mode) && !S_ISFIFO(mode) && !S_ISSOCK(mode)) throw Errno{EINVAL};
  if (find(dir, name) != 0) throw Errno{EEXIST};
  Inode made;
  const Ino ino = new_inode(dir, mode, who, made);
  try {
    if (S_ISCHR(mode) || S_ISBLK(mode)) {
      encode_device(made.raw, rdev);
      write_inode(ino, made);
    }
    add_entry(dir, name, ino, mode);
  } catch (const Errno&) {
    release(ino);
    throw;
  }
  touch_directory(dir, 0);
  return ino;
}

Ino Volume::make_directory(Ino dir, std::string_view name, mode_t mode, const Caller& who) {
  require_writable();
  check_name(name);
  Inode parent = read_inode(dir);
  if (!parent.is_dir()) throw Errno{ENOTDIR};
  if (parent.raw.i_links_count >= EXT2_LINK_MAX - 1 && !ext2fs_has_feature_dir_nlink(fs_->super)) throw Errno{EMLINK};
  const std::string n(name);
  // ext2fs_mkdir counts the new inode and block only once it is linked: a retry after
  // the parent has grown leaves nothing behind.
  errcode_t code = ext2fs_mkdir(fs_, dir, 0, n.c_str());
  if (code == EXT2_ET_DIR_NO_SPACE) {
    check(ext2fs_expand_dir(fs_, dir));
    code = ext2fs_mkdir(fs_, dir, 0, n.c_str());
  }
  if (code == EXT2_ET_DIR_EXISTS) throw Errno{EEXIST};
  check(code);
  const Ino ino = lookup(dir, name);
  Inode inode = read_inode(ino);
  // Owner, permissions and times as for any new inode (ext2fs_mkdir makes root's 0755).
  gid_t gid = who.gid;
  mode_t full = S_IFDIR | (mode & 07777);
  if (parent.raw.i_mode & S_ISGID) {
    gid = inode_gid(parent.raw);
    full |= S_ISGID;
  }
  inode.raw.i_mode = static_cast<std::uint16_t>(full);
  set_owner(inode.raw, who.uid, gid);
  const timespec t = now();
  const unsigned size = EXT2_INODE_SIZE(fs_->super);
  if (size > EXT2_GOOD_OLD_INODE_SIZE && inode.raw.i_extra_isize == 0)
    inode.raw.i_extra_isize =
        static_cast<std::uint16_t>(std::min<unsigned>(sizeof(ext2_inode_large), size) - EXT2_GOOD_OLD_INODE_SIZE);
  set_times(inode.raw, size, &t, &t, &t);
  write_inode(ino, inode);
  touch_directory(dir, 0);  // ext2fs_mkdir counted the parent's new link
  return ino;
}

Ino Volume::make_symlink(Ino dir, std::string_view name, const std::string& target, const Caller& who) {
  require_writable();
  check_name(name);
  if (target.empty() || target.size() >= fs_->blocksize) throw Errno{ENAMETOOLONG};
  if (find(dir, name) != 0) throw Errno{EEXIST};
  ext2_ino_t ino = 0;
  check(ext2fs_new_inode(fs_, dir, LINUX_S_IFLNK | 0777, nullptr, &ino));
  std::string text = target;
  // Without a name, ext2fs_symlink writes and counts the inode (the target in it, or in
  // a block of its own) and links nothing: the entry is added below, growing the
  // directory when it is full.
  check(ext2fs_symlink(fs_, dir, ino, nullptr, text.data()));
  try {
    Inode inode = read_inode(ino);
    gid_t gid = who.gid;
    Inode parent = read_inode(dir);
    if (parent.raw.i_mode & S_ISGID) gid = inode_gid(parent.raw);
    set_owner(inode.raw, who.uid, gid);
    const timespec t = now();
    set_times(inode.raw, EXT2_INODE_SIZE(fs_->super), &t, &t, &t);
    write_inode(ino, inode);
    add_entry(dir, name, ino, S_IFLNK);
  } catch (const Errno&) {
    release(ino);
    throw;
  }
  touch_directory(dir, 0);
  return ino;
}

void Volume::link(Ino ino, Ino dir, std::string_view name) {
  require_writable();
  check_name(name);
  Inode inode = read_inode(ino);
  if (inode.is_dir()) throw Errno{EPERM};
  if (inode.raw.i_links_count >= EXT2_LINK_MAX) throw Errno{EMLINK};
  if (find(dir, name) != 0) throw Errno{EEXIST};
  add_entry(dir, name, ino, inode.mode());
  inode = read_inode(ino);
  ++inode.raw.i_links_count;
  unlinked_.erase(ino);
  const timespec t = now();
  set_times(inode.raw, EXT2_INODE_SIZE(fs_->super), nullptr, nullptr, &t);
  write_inode(ino, inode);
  touch_directory(dir, 0);
}

void Volume::unlink(Ino dir, std::string_view name) {
  require_writable();
  const Ino ino = lookup(dir, name);
  if (read_inode(ino).is_dir()) throw Errno{EISDIR};
  const std::string n(name);
  check(ext2fs_unlink(fs_, dir, n.c_str(), ino, 0));
  touch_directory(dir, 0);
  drop_link(ino);
}

void Volume::remove_directory(Ino dir, std::string_view name) {
  require_writable();
  if (name == ".") throw Errno{EINVAL};
  if (name == "..") throw Errno{ENOTEMPTY};
  const Ino ino = lookup(dir, name);
  if (!read_inode(ino).is_dir()) throw Errno{ENOTDIR};
  if (!directory_empty(ino)) throw Errno{ENOTEMPTY};
  const std::string n(name);
  check(ext2fs_unlink(fs_, dir, n.c_str(), ino, 0));
  touch_directory(dir, -1);  // its ".." is gone
  drop_link(ino);
}

void Volume::rename(Ino from_dir, std::string_view from, Ino to_dir, std::string_view to, unsigned flags,
                    const Caller& who) {
  require_writable();
  check_name(to);
  if ((flags & ~(RENAME_NOREPLACE | RENAME_EXCHANGE | RENAME_WHITEOUT)) != 0 ||
      ((flags & RENAME_EXCHANGE) && (flags & (RENAME_NOREPLACE | RENAME_WHITEOUT))))
    throw Errno{EINVAL};
  const Ino source = lookup(from_dir, from);
  const Ino target = find(to_dir, to);
  Inode source_inode = read_inode(source);
  const bool source_dir = source_inode.is_dir();
  const timespec t = now();
  const unsigned inode_size = EXT2_INODE_SIZE(fs_->super);

  if (flags & RENAME_EXCHANGE) {
    if (target == 0) throw Errno{ENOENT};
    Inode target_inode = read_inode(target);
    const bool target_dir = target_inode.is_dir();
    set_entry(from_dir, from, target, target_inode.mode());
    set_entry(to_dir, to, source, source_inode.mode());
    if (from_dir != to_dir) {
      if (source_dir) set_entry(source, "..", to_dir, S_IFDIR);
      if (target_dir) set_entry(target, "..", from_dir, S_IFDIR);
      const int moved = (source_dir ? 1 : 0) - (target_dir ? 1 : 0);  // subdirectories from -> to
      touch_directory(from_dir, -moved);
      touch_directory(to_dir, moved);
    } else {
      touch_directory(from_dir, 0);
    }
    for (Ino ino : {source, target}) {
      Inode inode = read_inode(ino);
      set_times(inode.raw, inode_size, nullptr, nullptr, &t);
      write_inode(ino, inode);
    }
    return;
  }
  if (target != 0 && (flags & RENAME_NOREPLACE)) throw Errno{EEXIST};
  if (target == source) return;  // two names of one file: nothing to do (POSIX)
  bool target_dir = false;
  if (target != 0) {
    Inode target_inode = read_inode(target);
    target_dir = target_inode.is_dir();
    if (source_dir && !target_dir) throw Errno{ENOTDIR};
    if (!source_dir && target_dir) throw Errno{EISDIR};
    if (target_dir && !directory_empty(target)) throw Errno{ENOTEMPTY};
  } else if (source_dir && from_dir != to_dir && !ext2fs_has_feature_dir_nlink(fs_->super) &&
             read_inode(to_dir).raw.i_links_count >= EXT2_LINK_MAX - 1) {
    throw Errno{EMLINK};
  }
  // The whiteout is made before anything changes: running out of inodes fails the
  // rename as a whole.
  Ino whiteout = 0;
  if (flags & RENAME_WHITEOUT) {
    Inode made;
    whiteout = new_inode(from_dir, S_IFCHR, who, made);  // 0/0: all of i_block is zero
  }
  try {
    if (target != 0)
      set_entry(to_dir, to, source, source_inode.mode());
    else
      add_entry(to_dir, to, source, source_inode.mode());
  } catch (const Errno&) {
    if (whiteout != 0) release(whiteout);
    throw;
  }
  if (whiteout != 0) {
    set_entry(from_dir, from, whiteout, S_IFCHR);
  } else {
    const std::string n(from);
    check(ext2fs_unlink(fs_, from_dir, n.c_str(), source, 0));
  }
  if (target != 0) drop_link(target);
  if (source_dir && from_dir != to_dir) {
    set_entry(source, "..", to_dir, S_IFDIR);
    touch_directory(from_dir, -1);
    touch_directory(to_dir, target_dir ? 0 : 1);  // a replaced directory's ".." goes, the moved one's comes
  } else {
    touch_directory(from_dir, 0);
    if (to_dir != from_dir)
      touch_directory(to_dir, target_dir ? -1 : 0);
    else if (target_dir)
      touch_directory(to_dir, -1);
  }
  source_inode = read_inode(source);
  set_times(source_inode.raw, inode_size, nullptr, nullptr, &t);
  write_inode(source, source_inode);
}

void Volume::change(Ino ino, const Change& c) {
  if (c.mode || c.uid || c.gid || c.size || c.atime || c.mtime || c.ctime) require_writable();
  if (c.size) {
    Inode inode = read_inode(ino);
    if (inode.is_dir()) throw Errno{EISDIR};
    if (!LINUX_S_ISREG(inode.raw.i_mode)) throw Errno{EINVAL};
    // set_size2 frees the blocks past the end and zeroes the rest of the last one, so
    // that growing the file again shows zeroes.
    OpenFile file(fs_, ino, EXT2_FILE_WRITE);
    check(ext2fs_file_set_size2(file.get(), c.new_size));
    file.close();
  }
  Inode inode = read_inode(ino);
  const timespec t = now();
  if (c.mode) inode.raw.i_mode = static_cast<std::uint16_t>((inode.raw.i_mode & S_IFMT) | (c.new_mode & 07777));
  set_owner(inode.raw, c.uid ? c.new_uid : inode_uid(inode.raw), c.gid ? c.new_gid : inode_gid(inode.raw));
  auto chosen = [&](const timespec& asked) { return asked.tv_nsec == UTIME_NOW ? t : asked; };
  const timespec atime = chosen(c.new_atime), mtime = chosen(c.new_mtime);
  timespec ctime = c.ctime ? chosen(c.new_ctime) : t;
  const unsigned size = EXT2_INODE_SIZE(fs_->super);
  set_times(inode.raw, size, c.atime ? &atime : nullptr, c.mtime ? &mtime : (c.size ? &t : nullptr), &ctime);
  write_inode(ino, inode);
}

std::size_t Volume::read(Ino ino, std::uint64_t offset, char* buffer, std::size_t size) {
  if (read_inode(ino).is_dir()) throw Errno{EISDIR};
  OpenFile file(fs_, ino, 0);
  check(ext2fs_file_llseek(file.get(), offset, EXT2_SEEK_SET, nullptr));
  unsigned got = 0;
  check(ext2fs_file_read(file.get(), buffer, static_cast<unsigned>(size), &got));
  return got;
}

std::size_t Volume::write(Ino ino, std::uint64_t offset, const char* data, std::size_t size) {
  require_writable();
  // File data stops at the blocks reserved by mke2fs (5%, as the kernel's ext3 keeps
  // them from unprivileged users): directories, whiteouts and attributes still find
  // room there, and so does overlayfs's work directory when a full overlay is mounted
  // next time. A write within blocks the file already has needs none.
  if (ext2fs_free_blocks_count(fs_->super) <= ext2fs_r_blocks_count(fs_->super)) {
    Inode inode = read_inode(ino);
    const std::uint64_t allocated = ext2fs_get_stat_i_blocks(fs_, inode.small()) * 512;
    if (offset + size > EXT2_I_SIZE(&inode.raw) || allocated < EXT2_I_SIZE(&inode.raw)) throw Errno{ENOSPC};
  }
  std::size_t written = 0;
  {
    OpenFile file(fs_, ino, EXT2_FILE_WRITE);
    check(ext2fs_file_llseek(file.get(), offset, EXT2_SEEK_SET, nullptr));
    unsigned done = 0;
    errcode_t code = ext2fs_file_write(file.get(), data, static_cast<unsigned>(size), &done);
    written = done;
    file.close();
    // A write that did not fit fails as a whole (ENOSPC): the kernel's writeback takes a
    // short write for an I/O error.
    check(code);
  }
  Inode inode = read_inode(ino);
  const timespec t = now();
  set_times(inode.raw, EXT2_INODE_SIZE(fs_->super), nullptr, &t, &t);
  write_inode(ino, inode);
  return written;
}

std::string Volume::get_xattr(Ino ino, const std::string& name) {
  std::string value;
  if (!find_xattr(ino, name, value)) throw Errno{ENODATA};
  return value;
}

bool Volume::find_xattr(Ino ino, const std::string& name, std::string& value) {
  check_xattr_name(name);
  read_inode(ino);
  Xattrs xattrs(fs_, ino);
  return xattrs.find(name, value);
}

namespace {

int collect_name(char* name, char*, std::size_t, void* data) {
  static_cast<std::vector<std::string>*>(data)->emplace_back(name);
  return 0;
}

}  // namespace

std::vector<std::string> Volume::list_xattrs(Ino ino) {
  read_inode(ino);
  std::vector<std::string> names;
  errcode_t code = 0;
  {
    ext2_xattr_handle* handle = nullptr;
    code = ext2fs_xattrs_open(fs_, ino, &handle);
    if (code == EXT2_ET_MISSING_EA_FEATURE) return names;
    check(code);
    code = ext2fs_xattrs_read(handle);
    if (code == 0) code = ext2fs_xattrs_iterate(handle, collect_name, &names);
    ext2fs_xattrs_close(&handle);
  }
  check(code);
  std::erase_if(names, [](const std::string& n) { return n.rfind("system.", 0) == 0; });
  return names;
}

void Volume::set_xattr(Ino ino, const std::string& name, std::string_view value, int flags) {
  require_writable();
  check_xattr_name(name);
  read_inode(ino);
  {
    Xattrs xattrs(fs_, ino);
    std::string old;
    const bool exists = xattrs.find(name, old);
    if ((flags & XATTR_CREATE) && exists) throw Errno{EEXIST};
    if ((flags & XATTR_REPLACE) && !exists) throw Errno{ENODATA};
    check(ext2fs_xattr_set(xattrs.get(), name.c_str(), value.data(), value.size()));
  }
  Inode inode = read_inode(ino);
  const timespec t = now();
  set_times(inode.raw, EXT2_INODE_SIZE(fs_->super), nullptr, nullptr, &t);
  write_inode(ino, inode);
}

void Volume::remove_xattr(Ino ino, const std::string& name) {
  require_writable();
  check_xattr_name(name);
  read_inode(ino);
  {
    Xattrs xattrs(fs_, ino);
    std::string old;
    if (!xattrs.find(name, old)) throw Errno{ENODATA};
    check(ext2fs_xattr_remove(xattrs.get(), name.c_str()));
  }
  Inode inode = read_inode(ino);
  const timespec t = now();
  set_times(inode.raw, EXT2_INODE_SIZE(fs_->super), nullptr, nullptr, &t);
  write_inode(ino, inode);
}

Volume::Usage Volume::usage() {
  const ext2_super_block* super = fs_->super;
  Usage u{};
  u.block_size = fs_->blocksize;
  u.blocks = ext2fs_blocks_count(fs_->super);
  u.free_blocks = ext2fs_free_blocks_count(fs_->super);
  const blk64_t reserved = ext2fs_r_blocks_count(fs_->super);
  u.available_blocks = u.free_blocks > reserved ? u.free_blocks - reserved : 0;
  u.inodes = super->s_inodes_count;
  u.free_inodes = super->s_free_inodes_count;
  return u;
}

void Volume::remember(Ino ino) { ++lookups_[ino]; }

void Volume::opened(Ino ino) { ++opens_[ino]; }

void Volume::closed(Ino ino) {
  auto it = opens_.find(ino);
  if (it == opens_.end()) return;
  if (--it->second != 0) return;
  opens_.erase(it);
  if (unlinked_.count(ino) != 0) free_data(ino);
}

void Volume::forget(Ino ino, std::uint64_t count) {
  auto it = lookups_.find(ino);
  if (it == lookups_.end()) return;
  if (it->second > count) {
    it->second -= count;
    return;
  }
  lookups_.erase(it);
  if (unlinked_.count(ino) != 0) release(ino);
}

}  // namespace capsa::ext3
