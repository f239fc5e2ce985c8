#include "squashfs/unpack.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <optional>
#include <string_view>
#include <vector>

#include "sif/image.hpp"
#include "squashfs/reader.hpp"
#include "util/error.hpp"
#include "util/fd.hpp"
#include "util/log.hpp"

namespace capsa::squashfs {
namespace {

// Hard-link sources kept open (O_PATH) until their last name is made: linking through
// /proc/self/fd needs no path lookup, so a source whose directory has become
// unsearchable (mode 0000 set on leaving it) still links. Beyond this many pending
// sources, further names get a copy of their own (a hostile nlink cannot exhaust fds).
constexpr std::size_t kMaxPendingLinks = 512;

std::string fd_path(int fd) { return "/proc/self/fd/" + std::to_string(fd); }

struct PendingLink {
  UniqueFd source;          // O_PATH of the first name
  std::uint32_t remaining;  // names still to come
};

class Unpacker : public TreeVisitor {
 public:
  Unpacker(UniqueFd root, std::string directory, const UnpackOptions& options, std::string label)
      : root_(std::move(root)), directory_(std::move(directory)), options_(options), label_(std::move(label)) {}

  void enter_directory(const Entry& entry) override {
    if (entry.name.empty()) {
      UniqueFd fd(::fcntl(root_.get(), F_DUPFD_CLOEXEC, 0));
      if (!fd) throw_errno(directory_);
      dirs_.push_back({std::move(fd), "/"});
      return;
    }
    int parent = current();
    std::string path = child_path(entry.name);
    // 0700 while filling it: the owner must be able to write and search whatever the final mode.
    if (::mkdirat(parent, entry.name.c_str(), 0700) != 0) fail_create(path);
    int fd = ::openat(parent, entry.name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) throw_errno(where(path));
    dirs_.push_back({UniqueFd(fd), path});
  }

  void leave_directory(const Entry& entry) override {
    Dir dir = std::move(dirs_.back());
    dirs_.pop_back();
    finish_attributes(dir.fd.get(), entry, dir.path);
  }

  void visit(const Entry& entry, const ReadContent& read) override {
    int parent = current();
    const std::string path = child_path(entry.name);
    const char* name = entry.name.c_str();
    if (entry.nlink > 1 && link_existing(entry, parent, path)) return;
    switch (entry.type) {
      case Entry::Type::File: {
        UniqueFd fd(::openat(parent, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
        if (!fd) fail_create(path);
        std::uint64_t offset = 0;
        read([&](const char* data, std::size_t size) {
          write_all_at(fd.get(), {reinterpret_cast<const std::uint8_t*>(data), size}, offset);
          offset += size;
        });
        finish_attributes(fd.get(), entry, path);
        remember_link(entry, fd.get());
        return;
      }
      case Entry::Type::Symlink:
        if (::symlinkat(entry.target.c_str(), parent, name) != 0) fail_create(path);
        break;
      case Entry::Type::Fifo:
        if (::mkfifoat(parent, name, 0600) != 0) fail_create(path);
        break;
      case Entry::Type::Socket:
        if (::mknodat(parent, name, S_IFSOCK | 0600, 0) != 0) fail_create(path);
        break;
      case Entry::Type::BlockDevice:
      case Entry::Type::CharDevice: {
        mode_t type = entry.type == Entry::Type::BlockDevice ? S_IFBLK : S_IFCHR;
        if (::mknodat(parent, name, type | 0600, ::makedev(entry.major, entry.minor)) != 0) {
          if (errno == EEXIST) fail_create(path);
          // Unprivileged callers (and user namespaces) may not create device nodes.
          log::warning({label_, ": ", path, ": device node not created (", std::strerror(errno), ")"});
          return;
        }
        break;
      }
      case Entry::Type::Directory: break;  // walk() never passes directories here
    }
    // Not opened: a symlink must never be followed, and opening a fifo would block.
    UniqueFd node(::openat(parent, name, O_PATH | O_NOFOLLOW | O_CLOEXEC));
    if (!node) throw_errno(where(path));
    finish_attributes_by_name(parent, entry, path);
    remember_link(entry, node.get());
  }

 private:
  struct Dir {
    UniqueFd fd;
    std::string path;  // in the image, for messages
  };

  int current() const { return dirs_.back().fd.get(); }
  std::string child_path(const std::string& name) const {
    const std::string& parent = dirs_.back().path;
    return parent == "/" ? "/" + name : parent + "/" + name;
  }
  std::string where(const std::string& path) const { return directory_ + path; }

  [[noreturn]] void fail_create(const std::string& path) const {
    if (errno == EEXIST) throw FormatError(label_ + ": " + path + ": the image holds this name twice");
    throw_errno("unpacking " + where(path));
  }

  // chown where allowed; a caller that may not (EPERM: unprivileged; EINVAL: the id is
  // unmapped in this user namespace) keeps the entry as its own, as documented.
  void change_owner(int result_of_chown, const std::string& path) {
    if (result_of_chown == 0 || errno == EPERM || errno == EINVAL) return;
    throw_errno("setting the owner of " + where(path));
  }

  // Owner first: chown clears setuid/setgid bits, the mode restores them.
  void finish_attributes(int fd, const Entry& entry, const std::string& path) {
    if (options_.keep_ownership) change_owner(::fchown(fd, entry.uid, entry.gid), path);
    if (::fchmod(fd, entry.mode) != 0) throw_errno("setting the mode of " + where(path));
    timespec times[2] = {{entry.mtime, 0}, {entry.mtime, 0}};
    if (::futimens(fd, times) != 0) throw_errno("setting the time of " + where(path));
  }

  void finish_attributes_by_name(int parent, const Entry& entry, const std::string& path) {
    const char* name = entry.name.c_str();
    if (options_.keep_ownership) change_owner(::fchownat(parent, name, entry.uid, entry.gid, AT_SYMLINK_NOFOLLOW), path);
    // Symlinks have no mode of their own on Linux.
    if (entry.type != Entry::Type::Symlink && ::fchmodat(parent, name, entry.mode, 0) != 0)
      throw_errno("setting the mode of " + where(path));
    timespec times[2] = {{entry.mtime, 0}, {entry.mtime, 0}};
    if (::utimensat(parent, name, times, AT_SYMLINK_NOFOLLOW) != 0) throw_errno("setting the time of " + where(path));
  }

  void remember_link(const Entry& entry, int fd) {
    if (entry.nlink <= 1 || pending_.count(entry.inode_number)) return;
    if (pending_.size() >= kMaxPendingLinks) {
      if (!warned_links_)
        log::warning(label_ + ": too many hard-linked files at once; later names become copies");
      warned_links_ = true;
      return;
    }
    // A duplicate, not a reopening of /proc/self/fd/N (with O_NOFOLLOW that would be
    // the proc link itself, which linkat refuses with EXDEV).
    int copy = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (copy < 0) throw_errno("keeping a hard-link source open");
    pending_[entry.inode_number] = {UniqueFd(copy), entry.nlink - 1};
  }

  // A further name of an inode made before: a hard link to it. False when there is none
  // (this is the first name, or the source was not kept).
  bool link_existing(const Entry& entry, int parent, const std::string& path) {
    auto it = pending_.find(entry.inode_number);
    if (it == pending_.end()) return false;
    if (::linkat(AT_FDCWD, fd_path(it->second.source.get()).c_str(), parent, entry.name.c_str(), AT_SYMLINK_FOLLOW) != 0) {
      if (errno == EEXIST) fail_create(path);
      throw_errno("hard-linking " + where(path));
    }
    if (--it->second.remaining == 0) pending_.erase(it);
    return true;
  }

  UniqueFd root_;
  std::string directory_;
  UnpackOptions options_;
  std::string label_;
  std::vector<Dir> dirs_;
  std::map<std::uint32_t, PendingLink> pending_;
  bool warned_links_ = false;
};

// The directory to unpack into: created (0700 until the image root's mode is set), or an
// existing empty directory.
UniqueFd open_target(const std::string& directory) {
  if (::mkdir(directory.c_str(), 0700) != 0 && errno != EEXIST) throw_errno("creating " + directory);
  UniqueFd fd(::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) throw_errno(directory);
  UniqueFd listing(::fcntl(fd.get(), F_DUPFD_CLOEXEC, 0));
  DIR* dir = ::fdopendir(listing.release());
  if (dir == nullptr) throw_errno(directory);
  bool empty = true;
  while (dirent* e = ::readdir(dir)) {
    std::string_view name = e->d_name;
    if (name != "." && name != "..") empty = false;
  }
  ::closedir(dir);
  if (!empty) throw Error(directory + " exists and is not empty (unpack needs a new or empty directory)");
  return fd;
}

}  // namespace

void unpack_to_directory(const std::string& image_path, const std::string& directory, const UnpackOptions& options) {
  std::uint64_t offset = 0, size = 0;
  std::optional<sif::Image> sif;
  UniqueFd bare;
  int fd = -1;
  std::string label = image_path;
  if (sif::looks_like_sif(image_path)) {
    sif.emplace(sif::Image::open(image_path));
    const sif::Descriptor* primary = sif->primary_partition();
    if (primary == nullptr || !has_squashfs_magic(sif->fd(), static_cast<std::uint64_t>(primary->offset)))
      throw FormatError(image_path + ": no squashfs primary system partition to unpack");
    fd = sif->fd();
    offset = static_cast<std::uint64_t>(primary->offset);
    size = static_cast<std::uint64_t>(primary->size);
    label += ": primary partition";
  } else {
    bare = open_file(image_path, O_RDONLY);
    if (!has_squashfs_magic(bare.get(), 0)) throw FormatError(image_path + ": neither a SIF file nor a squashfs image");
    fd = bare.get();
    size = file_size(fd);
  }
  Reader reader(fd, offset, size, label);
  Unpacker unpacker(open_target(directory), directory, options, label);
  reader.walk(unpacker);
}

}  // namespace capsa::squashfs
