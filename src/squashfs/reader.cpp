#include "squashfs/reader.hpp"

#include <sqfs/data_reader.h>
#include <sqfs/error.h>
#include <sqfs/id_table.h>
#include <sqfs/inode.h>
#include <sqfs/meta_reader.h>
#include <sqfs/super.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <deque>
#include <functional>
#include <new>
#include <optional>
#include <string_view>
#include <vector>

#include "squashfs/directory_entries.hpp"
#include "squashfs/image.hpp"
#include "squashfs/sqfs_handles.hpp"
#include "util/error.hpp"
#include "util/path.hpp"

namespace capsa::squashfs {
namespace {

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
  // Destroyed in reverse order: the readers use the decompressor, all use the image.
  std::shared_ptr<const Image> image;
  const sqfs_super_t& super;
  const std::string& label;
  CompressorPtr decompressor;
  MetaReaderPtr inode_table;
  MetaReaderPtr directory_table;
  std::unique_ptr<sqfs_data_reader_t, DestroyObject> data;
  std::unique_ptr<sqfs_id_table_t, DestroyObject> ids;  // read on the first walk()

  explicit Impl(std::shared_ptr<const Image> opened)
      : image(std::move(opened)), super(image->super()), label(image->label()) {}

  void check(int code, const std::string& what) const { image->check(code, what); }

  void open();
  InodePtr read_inode(std::uint64_t ref, const std::string& path) const {
    return image->read_inode(inode_table.get(), ref, path);
  }
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
  decompressor = image->make_decompressor();
  inode_table = image->inode_table(decompressor.get());
  directory_table = image->directory_table(decompressor.get());
  data.reset(sqfs_data_reader_create(image->file(), super.block_size, decompressor.get(), 0));
  if (!data) throw std::bad_alloc();
  check(sqfs_data_reader_load_fragment_table(data.get(), &super), "squashfs fragment table");
  if (!is_directory(*root())) throw FormatError(label + ": squashfs root inode is not a directory");
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
  DirectoryEntries entries(*image, directory_table.get(), dir, path);
  DirectoryEntry entry;
  // Entries are stored in byte order: past the name, it is not there.
  while (entries.next(entry) && entry.name <= name)
    if (entry.name == name) return read_inode(entry.ref, path);
  return nullptr;
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

Reader::Reader(int fd, std::uint64_t offset, std::uint64_t size, std::string label)
    : Reader(std::make_shared<const Image>(fd, offset, size, std::move(label))) {}

Reader::Reader(std::shared_ptr<const Image> image) : impl_(std::make_unique<Impl>(std::move(image))) { impl_->open(); }

Reader::~Reader() = default;
Reader::Reader(Reader&&) noexcept = default;
Reader& Reader::operator=(Reader&&) noexcept = default;

const std::string& Reader::label() const { return impl_->label; }

const std::shared_ptr<const Image>& Reader::image() const { return impl_->image; }

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
  DirectoryEntries entries(*impl_->image, impl_->directory_table.get(), *inode, path);
  for (DirectoryEntry entry; entries.next(entry);) names.push_back(std::move(entry.name));
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
  DirectoryEntries entries(*image, directory_table.get(), dir, path);
  for (DirectoryEntry listed; entries.next(listed);) refs.emplace_back(std::move(listed.name), listed.ref);
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
    impl_->check(sqfs_id_table_read(impl_->ids.get(), impl_->image->file(), &impl_->super, impl_->decompressor.get()),
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
