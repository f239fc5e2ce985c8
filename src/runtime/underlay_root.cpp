#include "runtime/underlay_root.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <memory>
#include <set>

#include "util/error.hpp"
#include "util/log.hpp"

namespace capsa::runtime {
namespace {

std::vector<std::string> components(const std::string& path) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (start < path.size()) {
    std::size_t end = path.find('/', start);
    if (end == std::string::npos) end = path.size();
    if (end > start) parts.push_back(path.substr(start, end - start));
    start = end + 1;
  }
  return parts;
}

std::string joined(const std::vector<std::string>& parts, std::size_t count) {
  std::string path;
  for (std::size_t i = 0; i < count; ++i) path += "/" + parts[i];
  return path.empty() ? "/" : path;
}

// Binds `source` (an entry of the image) to `target`. A directory holding locked mounts
// (a sandbox with mounts below it, in a user namespace) can only be bound whole.
void bind_entry(const std::string& source, const std::string& target) {
  if (::mount(source.c_str(), target.c_str(), nullptr, MS_BIND, nullptr) == 0) return;
  if (errno == EINVAL && ::mount(source.c_str(), target.c_str(), nullptr, MS_BIND | MS_REC, nullptr) == 0) return;
  throw_errno("binding the image's " + source + " into the underlay");
}

struct DirCloser {
  void operator()(DIR* dir) const { ::closedir(dir); }
};

class Underlay {
 public:
  Underlay(std::string image, std::string root, const std::vector<UnderlayPoint>& missing)
      : image_(std::move(image)), root_(std::move(root)) {
    for (const UnderlayPoint& point : missing) {
      const std::vector<std::string> parts = components(point.path);
      for (std::size_t i = 1; i < parts.size(); ++i) descend_.insert(joined(parts, i));
    }
  }

  // Replicates the image's directory `dir` (a real directory of the image, "/" first):
  // each entry bound, copied (a symlink) or, on the way to a missing target, made anew and
  // replicated in turn.
  void replicate(const std::string& dir) {
    const std::string from = image_ + (dir == "/" ? "" : dir);
    std::unique_ptr<DIR, DirCloser> listing(::opendir(from.c_str()));
    if (!listing) throw_errno("reading the image's " + dir + " for the underlay");
    while (const dirent* entry = ::readdir(listing.get())) {
      const std::string name = entry->d_name;
      if (name == "." || name == "..") continue;
      const std::string inside = (dir == "/" ? "" : dir) + "/" + name;
      std::string source = from;
      source += "/";
      source += name;
      const std::string target = root_ + inside;
      struct stat st {};
      if (::lstat(source.c_str(), &st) != 0) throw_errno("the image's " + inside);
      if (S_ISLNK(st.st_mode)) {
        std::string link(PATH_MAX, '\0');
        const ssize_t length = ::readlink(source.c_str(), link.data(), link.size());
        if (length < 0) throw_errno("reading the image's link " + inside);
        link.resize(static_cast<std::size_t>(length));
        if (::symlink(link.c_str(), target.c_str()) != 0)
          throw_errno("copying the link " + inside + " to the underlay");
      } else if (S_ISDIR(st.st_mode)) {
        if (::mkdir(target.c_str(), st.st_mode & 07777) != 0) throw_errno("making " + inside + " in the underlay");
        if (descend_.count(inside) != 0) {
          ::chmod(target.c_str(), st.st_mode & 07777);  // the umask had its say in mkdir
          replicate(inside);
        } else {
          bind_entry(source, target);
          ++binds_;
        }
      } else {
        const int fd = ::open(target.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
        if (fd < 0) throw_errno("making " + inside + " in the underlay");
        ::close(fd);
        bind_entry(source, target);
        ++binds_;
      }
    }
  }

  int binds() const { return binds_; }

 private:
  std::string image_, root_;
  std::set<std::string> descend_;  // image directories on the way to a missing target
  int binds_ = 0;
};

// Creates `path` and its missing parents under `root`, a directory or an empty file.
void make_point(const std::string& root, const UnderlayPoint& point) {
  const std::vector<std::string> parts = components(point.path);
  std::string current = root;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    current += "/" + parts[i];
    const bool last = i + 1 == parts.size();
    if (last && !point.directory) {
      const int fd = ::open(current.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
      if (fd < 0 && errno != EEXIST) throw_errno("making the mount point " + point.path + " in the underlay");
      if (fd >= 0) ::close(fd);
    } else if (::mkdir(current.c_str(), 0755) != 0 && errno != EEXIST) {
      throw_errno("making the mount point " + point.path + " in the underlay");
    }
  }
}

}  // namespace

std::string resolve_in_image(const std::string& image, const std::string& path) {
  std::vector<std::string> pending = components(path);
  std::vector<std::string> resolved;
  int links = 0;
  for (std::size_t i = 0; i < pending.size(); ++i) {
    const std::string& part = pending[i];
    if (part == ".") continue;
    if (part == "..") {
      if (!resolved.empty()) resolved.pop_back();
      continue;
    }
    std::string here = image + joined(resolved, resolved.size());
    if (!resolved.empty()) here += "/";
    here += part;
    struct stat st {};
    if (::lstat(here.c_str(), &st) != 0) {  // the rest does not exist: kept as given
      for (std::size_t j = i; j < pending.size(); ++j) resolved.push_back(pending[j]);
      break;
    }
    if (!S_ISLNK(st.st_mode)) {
      resolved.push_back(part);
      continue;
    }
    if (++links > 40) break;  // a loop: the mount fails later, naming the target
    std::string link(PATH_MAX, '\0');
    const ssize_t length = ::readlink(here.c_str(), link.data(), link.size());
    if (length < 0) break;
    link.resize(static_cast<std::size_t>(length));
    std::vector<std::string> rest = components(link);
    rest.insert(rest.end(), pending.begin() + static_cast<std::ptrdiff_t>(i) + 1, pending.end());
    if (!link.empty() && link[0] == '/') resolved.clear();
    pending = std::move(rest);
    i = static_cast<std::size_t>(-1);
  }
  return joined(resolved, resolved.size());
}

void mount_underlay_root(const std::string& image, const std::string& root, const std::vector<UnderlayPoint>& missing,
                         bool nosuid) {
  if (::mount("capsa-underlay", root.c_str(), "tmpfs", (nosuid ? MS_NOSUID : 0) | MS_NODEV, "mode=0755") != 0)
    throw_errno("mounting the underlay's tmpfs on " + root);
  Underlay underlay(image, root, missing);
  underlay.replicate("/");
  for (const UnderlayPoint& point : missing) make_point(root, point);
  log::debug({"underlay: ", std::to_string(underlay.binds()), " entries of the image bound, ",
              std::to_string(missing.size()), " mount points made"});
}

void seal_underlay_root(int root_fd) {
  mount_attr attr{};
  attr.attr_set = MOUNT_ATTR_RDONLY;
  if (::mount_setattr(root_fd, "", AT_EMPTY_PATH, &attr, sizeof attr) == 0) return;
  // Kernels before 5.12: a remount, naming the flags the tmpfs was mounted with.
  const std::string where = "/proc/self/fd/" + std::to_string(root_fd);
  struct statvfs sv {};
  const unsigned long nosuid = ::statvfs(where.c_str(), &sv) == 0 && (sv.f_flag & ST_NOSUID) == 0 ? 0 : MS_NOSUID;
  if (::mount(nullptr, where.c_str(), nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY | nosuid | MS_NODEV, nullptr) != 0)
    throw_errno("making the underlay read-only");
}

bool underlay_chosen(bool requested, const std::string& enable_underlay, const std::string& enable_overlay,
                     bool needs_overlay, bool writable) {
  if (needs_overlay || writable) return false;
  if (enable_underlay == "preferred") return true;
  if (requested) return enable_underlay != "no";
  return enable_overlay == "no" && enable_underlay != "no";
}

}  // namespace capsa::runtime
