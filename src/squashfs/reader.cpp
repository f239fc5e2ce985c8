#include "squashfs/reader.hpp"

#include <sqfs/compressor.h>
#include <sqfs/data_reader.h>
#include <sqfs/dir.h>
#include <sqfs/meta_reader.h>
#include <sqfs/error.h>
#include <sqfs/id_table.h>
#include <sqfs/inode.h>
#include <sqfs/io.h>
#include <sqfs/super.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <deque>
#include <functional>
#include <limits>
#include <new>
#include <optional>
#include <string_view>
#include <type_traits>
#include <vector>

#include "squashfs/inode_bounds.hpp"
#include "squashfs/sqfs_handles.hpp"
#include "util/error.hpp"
#include "util/path.hpp"

namespace capsa::squashfs {
namespace {


// Far beyond any real directory; stops a crafted listing from exhausting memory.
constexpr std::size_t kMaxDirectoryEntries = 1 << 20;

// A sqfs_file_t over a window of a file descriptor we do not own. libsquashfs only
// ever sees offsets relative to the window, and every read is checked against it.
struct WindowFile {
  sqfs_file_t base;  // first member: libsquashfs hands &base back to the callbacks
  int fd = -1;
  std::uint64_t offset = 0;
  std::uint64_t size = 0;
  int read_errno = 0;  // set when pread itself failed, for a SystemError
};
static_assert(std::is_standard_layout_v<WindowFile>);

WindowFile& window_of(sqfs_file_t* file) { return *reinterpret_cast<WindowFile*>(file); }
const WindowFile& window_of(const sqfs_file_t* file) { return *reinterpret_cast<const WindowFile*>(file); }

int window_read_at(sqfs_file_t* file, sqfs_u64 offset, void* buffer, size_t size) {
  WindowFile& w = window_of(file);
  if (offset > w.size || size > w.size - offset) return SQFS_ERROR_OUT_OF_BOUNDS;
  auto* out = static_cast<char*>(buffer);
  while (size > 0) {
    ssize_t n = ::pread(w.fd, out, size, static_cast<off_t>(w.offset + offset));
    if (n < 0) {
      if (errno == EINTR) continue;
      w.read_errno = errno;
      return SQFS_ERROR_IO;
    }
    if (n == 0) return SQFS_ERROR_OUT_OF_BOUNDS;  // the file is shorter than the window
    out += n;
    offset += static_cast<std::uint64_t>(n);
    size -= static_cast<std::size_t>(n);
  }
  return 0;
}

// The reader is read-only: libsquashfs never writes through it, but the interface
// requires the hooks.
int window_write_at(sqfs_file_t*, sqfs_u64, const void*, size_t) { return SQFS_ERROR_UNSUPPORTED; }
int window_truncate(sqfs_file_t*, sqfs_u64) { return SQFS_ERROR_UNSUPPORTED; }
sqfs_u64 window_get_size(const sqfs_file_t* file) { return window_of(file).size; }
// Owned by Reader::Impl, so libsquashfs must never free it.
void window_destroy(sqfs_object_t*) {}

const char* describe(int code) {
  switch (code) {
    case SQFS_ERROR_ALLOC: return "out of memory (corrupt size field?)";
    case SQFS_ERROR_IO: return "read error";
    case SQFS_ERROR_COMPRESSOR: return "cannot decompress (corrupt data)";
    case SQFS_ERROR_CORRUPTED: return "corrupt data";
    case SQFS_ERROR_UNSUPPORTED: return "unsupported feature";
    case SQFS_ERROR_OVERFLOW: return "size overflow (corrupt data)";
    case SQFS_ERROR_OUT_OF_BOUNDS: return "reference past the end of the image (truncated or corrupt)";
    case SFQS_ERROR_SUPER_MAGIC: return "bad magic, not a squashfs image";
    case SFQS_ERROR_SUPER_VERSION: return "unsupported squashfs version (only 4.0 is supported)";
    case SQFS_ERROR_SUPER_BLOCK_SIZE: return "invalid block size";
    case SQFS_ERROR_NOT_DIR: return "not a directory";
    case SQFS_ERROR_NO_ENTRY: return "no such entry";
    case SQFS_ERROR_LINK_LOOP: return "link loop";
    case SQFS_ERROR_NOT_FILE: return "not a regular file";
    case SQFS_ERROR_SEQUENCE: return "internal sequence error";
    default: return "libsquashfs error";
  }
}

bool is_directory(const sqfs_inode_generic_t& inode) {
  return inode.base.type == SQFS_INODE_DIR || inode.base.type == SQFS_INODE_EXT_DIR;
}
bool is_regular_file(const sqfs_inode_generic_t& inode) {
  return inode.base.type == SQFS_INODE_FILE || inode.base.type == SQFS_INODE_EXT_FILE;
}
bool is_symlink(const sqfs_inode_generic_t& inode) {
  return inode.base.type == SQFS_INODE_SLINK || inode.base.type == SQFS_INODE_EXT_SLINK;
}

std::deque<std::string> split_path(const std::string& path) {
  std::vector<std::string> parts = path_components(path);
  return {parts.begin(), parts.end()};
}

}  // namespace

struct Reader::Impl {
  // Destroyed in reverse order: the readers use the compressor, all use the file.
  WindowFile file;
  sqfs_super_t super{};
  std::unique_ptr<sqfs_compressor_t, DestroyObject> compressor;
  // Directories are listed and inodes read with meta data readers of capsa's own rather
  // than libsquashfs's directory reader, which hides the inode references that the
  // bounds check (inode_bounds.hpp) needs before each inode is read.
  std::unique_ptr<sqfs_meta_reader_t, DestroyObject> inode_table;
  std::unique_ptr<sqfs_meta_reader_t, DestroyObject> directory_table;
  std::unique_ptr<sqfs_data_reader_t, DestroyObject> data;
  std::unique_ptr<sqfs_id_table_t, DestroyObject> ids;  // read on the first walk()
  std::string label;

  [[noreturn]] void fail(const std::string& what, int code) const {
    if (code == SQFS_ERROR_IO && file.read_errno != 0) throw SystemError(label + ": " + what, file.read_errno);
    throw FormatError(label + ": " + what + ": " + describe(code));
  }
  void check(int code, const std::string& what) const {
    if (code < 0) fail(what, code);
  }

  void open();
  InodePtr read_inode(std::uint64_t ref, const std::string& path) const;
  // Calls `each(name, inode reference)` for the entries of `dir` in stored order, until
  // it returns false. Names are checked: no '/', NUL, "." or "..".
  void for_each_entry(const sqfs_inode_generic_t& dir, const std::string& path,
                      const std::function<bool(std::string name, std::uint64_t ref)>& each) const;
  InodePtr root() const;
  InodePtr lookup(const sqfs_inode_generic_t& dir, const std::string& name, const std::string& path) const;
  InodePtr resolve(const std::string& path) const;

  void walk_directory(TreeVisitor& visitor, const sqfs_inode_generic_t& dir, const Entry& entry,
                      const std::string& path, int depth) const;
  Entry describe_inode(const sqfs_inode_generic_t& inode, std::string name, const std::string& path) const;
  void read_content(const sqfs_inode_generic_t& inode, const std::string& path,
                    const std::function<void(const char*, std::size_t)>& sink) const;
};

void Reader::Impl::open() {
  if (file.size < sizeof(sqfs_super_t))
    throw FormatError(label + ": " + std::to_string(file.size) + " bytes is too small for a squashfs image");
  check(sqfs_super_read(&super, &file.base), "squashfs super block");
  if (super.bytes_used > file.size)
    throw FormatError(label + ": squashfs image is truncated (super block says " + std::to_string(super.bytes_used) +
                      " bytes, only " + std::to_string(file.size) + " present)");
  // libsquashfs sizes the fragment table from this count before reading it; the
  // table's index must fit in the image, which bounds that allocation.
  std::uint64_t index_bytes = (std::uint64_t{super.fragment_entry_count} + 511) / 512 * 8;
  if (!(super.flags & SQFS_FLAG_NO_FRAGMENTS) && super.fragment_entry_count != 0 &&
      index_bytes > super.bytes_used)
    throw FormatError(label + ": squashfs fragment count " + std::to_string(super.fragment_entry_count) +
                      " does not fit in the image");

  sqfs_compressor_config_t config{};
  auto id = static_cast<SQFS_COMPRESSOR>(super.compression_id);
  check(sqfs_compressor_config_init(&config, id, super.block_size, SQFS_COMP_FLAG_UNCOMPRESS),
        "squashfs compressor settings");
  sqfs_compressor_t* raw_compressor = nullptr;
  int ret = sqfs_compressor_create(&config, &raw_compressor);
  if (ret == SQFS_ERROR_UNSUPPORTED) {
    const char* name = sqfs_compressor_name_from_id(id);
    throw FormatError(label + ": squashfs compressor " + (name ? name : std::to_string(super.compression_id)) +
                      " is not supported");
  }
  check(ret, "squashfs compressor");
  compressor.reset(raw_compressor);
  if (super.flags & SQFS_FLAG_COMPRESSOR_OPTIONS)
    check(compressor->read_options(compressor.get(), &file.base), "squashfs compressor options");

  inode_table.reset(sqfs_meta_reader_create(&file.base, compressor.get(), super.inode_table_start, super.directory_table_start));
  directory_table.reset(
      sqfs_meta_reader_create(&file.base, compressor.get(), super.directory_table_start, super.bytes_used));
  data.reset(sqfs_data_reader_create(&file.base, super.block_size, compressor.get(), 0));
  if (!inode_table || !directory_table || !data) throw std::bad_alloc();
  check(sqfs_data_reader_load_fragment_table(data.get(), &super), "squashfs fragment table");
  if (!is_directory(*root())) throw FormatError(label + ": squashfs root inode is not a directory");
}

InodePtr Reader::Impl::read_inode(std::uint64_t ref, const std::string& path) const {
  if (auto refused = oversized_inode(inode_table.get(), super, ref))
    throw FormatError(label + ": " + path + ": " + *refused + " (a damaged or hostile image)");
  sqfs_inode_generic_t* raw = nullptr;
  int ret = sqfs_meta_reader_read_inode(inode_table.get(), &super, ref >> 16, ref & 0xffff, &raw);
  InodePtr inode(raw);
  check(ret, path + ": reading inode");
  return inode;
}

void Reader::Impl::for_each_entry(const sqfs_inode_generic_t& dir, const std::string& path,
                                  const std::function<bool(std::string name, std::uint64_t ref)>& each) const {
  sqfs_readdir_state_t state{};
  check(sqfs_readdir_state_init(&state, &super, &dir), path + ": reading directory");
  for (std::size_t count = 0;; ++count) {
    sqfs_dir_entry_t* raw = nullptr;
    sqfs_u32 inode_number = 0;
    sqfs_u64 ref = 0;
    int ret = sqfs_meta_reader_readdir(directory_table.get(), &state, &raw, &inode_number, &ref);
    std::unique_ptr<sqfs_dir_entry_t, FreeBuffer> entry(raw);
    if (ret > 0) return;
    check(ret, path + ": reading directory");
    std::string name(reinterpret_cast<const char*>(entry->name), std::size_t{entry->size} + 1);
    if (name.find_first_of(std::string_view("/\0", 2)) != std::string::npos || name == "." || name == "..")
      throw FormatError(label + ": " + path + ": hostile directory entry name");
    if (count == kMaxDirectoryEntries)
      throw FormatError(label + ": " + path + ": more than " + std::to_string(kMaxDirectoryEntries) +
                        " directory entries");
    if (!each(std::move(name), ref)) return;
  }
}

InodePtr Reader::Impl::root() const {
  try {
    return read_inode(super.root_inode_ref, "/");
  } catch (const FormatError& e) {
    throw FormatError(std::string(e.what()) + " (squashfs root inode)");
  }
}

// The entry `name` of `dir`, or nullptr when there is none.
InodePtr Reader::Impl::lookup(const sqfs_inode_generic_t& dir, const std::string& name,
                              const std::string& path) const {
  std::optional<std::uint64_t> found;
  for_each_entry(dir, path, [&](std::string entry, std::uint64_t ref) {
    if (entry == name) found = ref;
    return entry < name;  // entries are stored in byte order: past the name, it is not there
  });
  if (!found) return nullptr;
  return read_inode(*found, path);
}

// Walks `path` from the image root, following symlinks within the image the way
// the kernel would inside a chroot: ".." never climbs above the root, and an
// absolute target restarts at the image root. nullptr when any component is missing.
InodePtr Reader::Impl::resolve(const std::string& path) const {
  if (path.find('\0') != std::string::npos) return nullptr;
  std::vector<InodePtr> dirs_walked;  // the root, then each directory entered
  dirs_walked.push_back(root());
  std::deque<std::string> pending = split_path(path);
  int links = 0;
  while (!pending.empty()) {
    std::string name = std::move(pending.front());
    pending.pop_front();
    if (name == ".") continue;
    if (name == "..") {
      if (dirs_walked.size() > 1) dirs_walked.pop_back();
      continue;
    }
    if (!is_directory(*dirs_walked.back())) return nullptr;
    InodePtr child = lookup(*dirs_walked.back(), name, path);
    if (!child) return nullptr;
    if (is_symlink(*child)) {
      if (++links > kMaxSymlinks)
        throw FormatError(label + ": " + path + ": too many levels of symbolic links");
      std::string target(reinterpret_cast<const char*>(child->extra), child->payload_bytes_used);
      if (target.empty() || target.find('\0') != std::string::npos) return nullptr;
      std::deque<std::string> parts = split_path(target);
      pending.insert(pending.begin(), parts.begin(), parts.end());
      if (target.front() == '/') dirs_walked.resize(1);
      continue;
    }
    dirs_walked.push_back(std::move(child));
  }
  return std::move(dirs_walked.back());
}

Reader::Reader(int fd, std::uint64_t offset, std::uint64_t size, std::string label) : impl_(std::make_unique<Impl>()) {
  impl_->label = std::move(label);
  if (offset > static_cast<std::uint64_t>(std::numeric_limits<off_t>::max()) ||
      size > static_cast<std::uint64_t>(std::numeric_limits<off_t>::max()) - offset)
    throw FormatError(impl_->label + ": squashfs image lies beyond the largest file offset");
  WindowFile& w = impl_->file;
  w.base.base.destroy = window_destroy;
  w.base.base.copy = nullptr;  // sqfs_copy then fails cleanly; nothing here copies files
  w.base.read_at = window_read_at;
  w.base.write_at = window_write_at;
  w.base.get_size = window_get_size;
  w.base.truncate = window_truncate;
  w.fd = fd;
  w.offset = offset;
  w.size = size;
  impl_->open();
}

Reader::~Reader() = default;
Reader::Reader(Reader&&) noexcept = default;
Reader& Reader::operator=(Reader&&) noexcept = default;

const std::string& Reader::label() const { return impl_->label; }

std::optional<std::string> Reader::read_file(const std::string& path, std::uint64_t max_bytes) const {
  InodePtr inode = impl_->resolve(path);
  if (!inode || !is_regular_file(*inode)) return std::nullopt;
  sqfs_u64 size = 0;
  impl_->check(sqfs_inode_get_file_size(inode.get(), &size), path);
  if (size > max_bytes)
    throw FormatError(impl_->label + ": " + path + " is too large (" + std::to_string(size) + " bytes, limit " +
                      std::to_string(max_bytes) + ")");
  std::string content(static_cast<std::size_t>(size), '\0');
  std::uint64_t done = 0;
  while (done < size) {
    // One call per 1 GiB: the library takes 32-bit sizes.
    auto chunk = static_cast<sqfs_u32>(std::min<std::uint64_t>(size - done, 1u << 30));
    sqfs_s32 n = sqfs_data_reader_read(impl_->data.get(), inode.get(), done, content.data() + done, chunk);
    impl_->check(n, path + ": reading file data");
    if (n == 0)
      throw FormatError(impl_->label + ": " + path + ": file data ends after " + std::to_string(done) + " of " +
                        std::to_string(size) + " bytes");
    done += static_cast<std::uint64_t>(n);
  }
  return content;
}

std::optional<std::vector<std::string>> Reader::list_directory(const std::string& path) const {
  InodePtr inode = impl_->resolve(path);
  if (!inode || !is_directory(*inode)) return std::nullopt;
  std::vector<std::string> names;
  impl_->for_each_entry(*inode, path, [&](std::string name, std::uint64_t) {
    names.push_back(std::move(name));
    return true;
  });
  std::sort(names.begin(), names.end());
  return names;
}

Entry Reader::Impl::describe_inode(const sqfs_inode_generic_t& inode, std::string name,
                                   const std::string& path) const {
  Entry e;
  e.name = std::move(name);
  e.mode = inode.base.mode & 07777u;
  e.mtime = inode.base.mod_time;
  e.inode_number = inode.base.inode_number;
  check(sqfs_id_table_index_to_id(ids.get(), inode.base.uid_idx, &e.uid), path + ": owner id");
  check(sqfs_id_table_index_to_id(ids.get(), inode.base.gid_idx, &e.gid), path + ": group id");
  auto device = [&](sqfs_u32 devno) {
    // The kernel's new_encode_dev layout, which squashfs stores.
    e.major = (devno & 0xfff00u) >> 8;
    e.minor = (devno & 0xffu) | ((devno >> 12) & 0xfff00u);
  };
  switch (inode.base.type) {
    case SQFS_INODE_DIR: e.type = Entry::Type::Directory; e.nlink = inode.data.dir.nlink; break;
    case SQFS_INODE_EXT_DIR: e.type = Entry::Type::Directory; e.nlink = inode.data.dir_ext.nlink; break;
    case SQFS_INODE_FILE:
    case SQFS_INODE_EXT_FILE: {
      e.type = Entry::Type::File;
      e.nlink = inode.base.type == SQFS_INODE_EXT_FILE ? inode.data.file_ext.nlink : 1;
      sqfs_u64 size = 0;
      check(sqfs_inode_get_file_size(&inode, &size), path);
      e.size = size;
      break;
    }
    case SQFS_INODE_SLINK:
    case SQFS_INODE_EXT_SLINK:
      e.type = Entry::Type::Symlink;
      e.nlink = inode.base.type == SQFS_INODE_SLINK ? inode.data.slink.nlink : inode.data.slink_ext.nlink;
      e.target.assign(reinterpret_cast<const char*>(inode.extra), inode.payload_bytes_used);
      if (e.target.empty() || e.target.find('\0') != std::string::npos)
        throw FormatError(label + ": " + path + ": corrupt symbolic link target");
      break;
    case SQFS_INODE_BDEV: e.type = Entry::Type::BlockDevice; e.nlink = inode.data.dev.nlink; device(inode.data.dev.devno); break;
    case SQFS_INODE_EXT_BDEV: e.type = Entry::Type::BlockDevice; e.nlink = inode.data.dev_ext.nlink; device(inode.data.dev_ext.devno); break;
    case SQFS_INODE_CDEV: e.type = Entry::Type::CharDevice; e.nlink = inode.data.dev.nlink; device(inode.data.dev.devno); break;
    case SQFS_INODE_EXT_CDEV: e.type = Entry::Type::CharDevice; e.nlink = inode.data.dev_ext.nlink; device(inode.data.dev_ext.devno); break;
    case SQFS_INODE_FIFO: e.type = Entry::Type::Fifo; e.nlink = inode.data.ipc.nlink; break;
    case SQFS_INODE_EXT_FIFO: e.type = Entry::Type::Fifo; e.nlink = inode.data.ipc_ext.nlink; break;
    case SQFS_INODE_SOCKET: e.type = Entry::Type::Socket; e.nlink = inode.data.ipc.nlink; break;
    case SQFS_INODE_EXT_SOCKET: e.type = Entry::Type::Socket; e.nlink = inode.data.ipc_ext.nlink; break;
    default: throw FormatError(label + ": " + path + ": unknown inode type " + std::to_string(inode.base.type));
  }
  return e;
}

void Reader::Impl::read_content(const sqfs_inode_generic_t& inode, const std::string& path,
                                const std::function<void(const char*, std::size_t)>& sink) const {
  sqfs_u64 size = 0;
  check(sqfs_inode_get_file_size(&inode, &size), path);
  std::vector<char> buffer(std::min<std::uint64_t>(size, std::uint64_t{1} << 20));
  std::uint64_t done = 0;
  while (done < size) {
    auto chunk = static_cast<sqfs_u32>(std::min<std::uint64_t>(size - done, buffer.size()));
    sqfs_s32 n = sqfs_data_reader_read(data.get(), &inode, done, buffer.data(), chunk);
    check(n, path + ": reading file data");
    if (n == 0)
      throw FormatError(label + ": " + path + ": file data ends after " + std::to_string(done) + " of " +
                        std::to_string(size) + " bytes");
    sink(buffer.data(), static_cast<std::size_t>(n));
    done += static_cast<std::uint64_t>(n);
  }
}

// Reads a directory's entries and inodes in full before descending: the dir reader has
// one cursor, which a nested directory would move.
void Reader::Impl::walk_directory(TreeVisitor& visitor, const sqfs_inode_generic_t& dir, const Entry& entry,
                                  const std::string& path, int depth) const {
  if (depth > Reader::kMaxDepth)
    throw FormatError(label + ": " + path + ": directories nested deeper than " + std::to_string(Reader::kMaxDepth) +
                      " (a directory loop?)");
  visitor.enter_directory(entry);
  std::vector<std::pair<std::string, InodePtr>> children;
  std::vector<std::pair<std::string, std::uint64_t>> refs;
  for_each_entry(dir, path, [&](std::string name, std::uint64_t ref) {
    refs.emplace_back(std::move(name), ref);
    return true;
  });
  for (auto& [name, ref] : refs) {
    InodePtr inode = read_inode(ref, path == "/" ? "/" + name : path + "/" + name);
    children.emplace_back(std::move(name), std::move(inode));
  }
  for (auto& [name, inode] : children) {
    std::string child_path = path == "/" ? "/" + name : path + "/" + name;
    Entry child = describe_inode(*inode, name, child_path);
    if (child.type == Entry::Type::Directory) {
      walk_directory(visitor, *inode, child, child_path, depth + 1);
    } else {
      const sqfs_inode_generic_t& file_inode = *inode;
      visitor.visit(child, [&](const std::function<void(const char*, std::size_t)>& sink) {
        read_content(file_inode, child_path, sink);
      });
    }
    inode.reset();
  }
  visitor.leave_directory(entry);
}

void Reader::walk(TreeVisitor& visitor) const {
  if (!impl_->ids) {
    impl_->ids.reset(sqfs_id_table_create(0));
    if (!impl_->ids) throw std::bad_alloc();
    impl_->check(sqfs_id_table_read(impl_->ids.get(), &impl_->file.base, &impl_->super, impl_->compressor.get()),
                 "squashfs id table");
  }
  InodePtr root = impl_->root();
  Entry entry = impl_->describe_inode(*root, "", "/");
  impl_->walk_directory(visitor, *root, entry, "/", 0);
}

bool has_squashfs_magic(int fd, std::uint64_t offset) {
  std::array<char, 4> magic{};
  std::size_t done = 0;
  while (done < magic.size()) {
    ssize_t n = ::pread(fd, magic.data() + done, magic.size() - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw_errno("reading squashfs magic");
    if (n == 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return std::string_view(magic.data(), magic.size()) == "hsqs";
}

}  // namespace capsa::squashfs
