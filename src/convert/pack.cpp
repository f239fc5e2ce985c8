#include "convert/pack.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "convert/convert.hpp"
#include "convert/merge_tree.hpp"
#include "convert/squashfs_writer.hpp"
#include "util/error.hpp"
#include "util/fd.hpp"
#include "util/log.hpp"

namespace capsa::convert {
namespace {

// Walks the tree with one open directory fd per level, never following a symlink: the
// sandbox was written by the build's %post, whose links may point anywhere on the host.
// The tree is the converter's MergeTree node type, so the converter's writer packs it.
class DirectoryPacker {
 public:
  DirectoryPacker(const std::string& directory, const PackOptions& options, SquashfsWriter& writer)
      : directory_(directory), options_(options), writer_(writer) {}

  void pack_root(Node& root) {
    UniqueFd fd(::open(directory_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!fd) throw_errno(directory_);
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) throw_errno(directory_);
    root.kind = Kind::Directory;
    root.explicit_attrs = true;
    root.attrs = attributes(st);
    pack_directory(fd.get(), root, "");
  }

 private:
  std::uint32_t map_uid(std::uint32_t uid) const {
    if (options_.force_uid) return *options_.force_uid;
    if (options_.owner_as_root && uid == *options_.owner_as_root) return 0;
    if (options_.subuid_start && uid >= *options_.subuid_start && uid - *options_.subuid_start < options_.subuid_count)
      return uid - *options_.subuid_start + 1;
    return uid;
  }
  std::uint32_t map_gid(std::uint32_t gid) const {
    if (options_.force_gid) return *options_.force_gid;
    if (options_.group_as_root && gid == *options_.group_as_root) return 0;
    if (options_.subgid_start && gid >= *options_.subgid_start && gid - *options_.subgid_start < options_.subgid_count)
      return gid - *options_.subgid_start + 1;
    return gid;
  }

  Attributes attributes(const struct stat& st) const {
    Attributes a;
    a.mode = st.st_mode & 07777;
    a.uid = map_uid(st.st_uid);
    a.gid = map_gid(st.st_gid);
    a.mtime = clamp_time(st.st_mtim.tv_sec);
    return a;
  }

  std::string where(const std::string& relative) const { return directory_ + "/" + relative; }

  // Entry names of the open directory, sorted bytewise (the order squashfs requires and
  // what makes the image independent of the file system's readdir order).
  std::vector<std::string> names_of(int dir_fd, const std::string& relative) const {
    int copy = ::openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (copy < 0) throw_errno(where(relative));
    DIR* dir = ::fdopendir(copy);
    if (dir == nullptr) {
      ::close(copy);
      throw_errno(where(relative));
    }
    std::vector<std::string> names;
    errno = 0;
    while (dirent* e = ::readdir(dir)) {
      std::string name = e->d_name;
      if (name != "." && name != "..") names.push_back(std::move(name));
    }
    int err = errno;
    ::closedir(dir);
    if (err != 0) throw SystemError("listing " + where(relative), err);
    std::sort(names.begin(), names.end());
    return names;
  }

  void pack_directory(int dir_fd, Node& dir, const std::string& relative) {
    for (const std::string& name : names_of(dir_fd, relative)) {
      const std::string path = relative.empty() ? name : relative + "/" + name;
      struct stat st {};
      if (::fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) throw_errno(where(path));
      if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) || S_ISSOCK(st.st_mode)) {
        log::warning({where(path), ": ", S_ISSOCK(st.st_mode) ? "socket" : "device node", " not packed"});
        continue;
      }
      auto node = std::make_unique<Node>();
      node->attrs = attributes(st);
      node->explicit_attrs = true;
      if (S_ISDIR(st.st_mode)) {
        node->kind = Kind::Directory;
        // A directory's mode is put back only once its entries are read: listing and
        // stat'ing them needs the r and x bits for as long as that takes.
        bool opened_up = false;
        UniqueFd child = open_readable(dir_fd, name, path, st, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC,
                                       &opened_up);
        if (opened_up) ::fchmod(child.get(), (st.st_mode & 07777) | S_IRUSR | S_IXUSR);
        pack_directory(child.get(), *node, path);
        if (opened_up) ::fchmod(child.get(), st.st_mode & 07777);
      } else if (!S_ISDIR(st.st_mode) && st.st_nlink > 1 && links_.count({st.st_dev, st.st_ino})) {
        node->kind = Kind::Hardlink;
        node->link_target = links_[{st.st_dev, st.st_ino}];
        node->target = path;
      } else {
        if (S_ISREG(st.st_mode)) {
          node->kind = Kind::File;
          pack_file(dir_fd, name, path, st, *node);
        } else if (S_ISLNK(st.st_mode)) {
          node->kind = Kind::Symlink;
          node->target = read_link(dir_fd, name, path, st);
        } else {
          node->kind = Kind::Fifo;
        }
        if (st.st_nlink > 1) links_[{st.st_dev, st.st_ino}] = node.get();
      }
      dir.children[name] = std::move(node);
    }
  }

  void pack_file(int dir_fd, const std::string& name, const std::string& path, const struct stat& st, Node& node) {
    UniqueFd fd = open_readable(dir_fd, name, path, st, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    node.file_inode = writer_.begin_file();
    std::vector<char>& buffer = buffer_;
    std::uint64_t done = 0;
    for (;;) {
      ssize_t n = ::read(fd.get(), buffer.data(), buffer.size());
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) throw_errno("reading " + where(path));
      if (n == 0) break;
      writer_.append(buffer.data(), static_cast<std::size_t>(n));
      done += static_cast<std::uint64_t>(n);
    }
    writer_.end_file();
    if (done != static_cast<std::uint64_t>(st.st_size))
      throw Error(where(path) + " changed size while being packed (is the sandbox still in use?)");
  }

  // Opens an entry to read it. An unprivileged caller's own entry that its mode makes
  // unreadable (0000: root-made files of a fakeroot build) is opened after a moment with
  // u+rx added, then its mode is put back: the image records the mode from `st`.
  UniqueFd open_readable(int dir_fd, const std::string& name, const std::string& path, const struct stat& st,
                         int flags, bool* opened_up = nullptr) const {
    UniqueFd fd(::openat(dir_fd, name.c_str(), flags));
    if (fd || errno != EACCES || st.st_uid != ::geteuid()) {
      if (!fd) throw_errno("reading " + where(path));
      return fd;
    }
    if (::fchmodat(dir_fd, name.c_str(), (st.st_mode & 07777) | S_IRUSR | S_IXUSR, 0) != 0)
      throw SystemError("reading " + where(path), EACCES);
    fd.reset(::openat(dir_fd, name.c_str(), flags));
    int err = errno;
    ::fchmodat(dir_fd, name.c_str(), st.st_mode & 07777, 0);
    if (!fd) throw SystemError("reading " + where(path), err);
    if (opened_up) *opened_up = true;
    return fd;
  }

  std::string read_link(int dir_fd, const std::string& name, const std::string& path, const struct stat& st) const {
    std::string target(static_cast<std::size_t>(st.st_size) + 1, '\0');
    ssize_t n = ::readlinkat(dir_fd, name.c_str(), target.data(), target.size());
    if (n < 0) throw_errno("reading the link " + where(path));
    if (static_cast<std::size_t>(n) >= target.size())
      throw Error(where(path) + " changed while being packed (is the sandbox still in use?)");
    target.resize(static_cast<std::size_t>(n));
    return target;
  }

  std::string directory_;
  const PackOptions& options_;
  SquashfsWriter& writer_;
  std::map<std::pair<dev_t, ino_t>, Node*> links_;  // first name of each multiply-linked inode
  std::vector<char> buffer_ = std::vector<char>(1 << 20);
};

}  // namespace

std::uint64_t pack_directory(const std::string& directory, int fd, std::uint64_t offset, const PackOptions& options) {
  ConvertOptions convert_options;
  convert_options.compressor = compressor_named(options.compression);
  convert_options.workers = options.threads;
  convert_options.level = options.level;
  convert_options.block_size = options.block_size;
  convert_options.source_date_epoch = source_date_epoch_from_environment();
  SquashfsWriter writer(fd, offset, directory + " (squashfs image)", convert_options);
  Node root;
  DirectoryPacker(directory, options, writer).pack_root(root);
  return writer.finish(root, convert_options.source_date_epoch).bytes;
}

}  // namespace capsa::convert
