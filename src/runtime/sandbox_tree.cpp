// Sandbox trees in a root mode (sandbox_run.hpp): unpacked, packed and removed with the
// identity that owns their files.
#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <memory>
#include <string>
#include <vector>

#include "runtime/sandbox_run.hpp"
#include "squashfs/unpack.hpp"
#include "util/error.hpp"
#include "util/fd.hpp"

namespace capsa::runtime {
namespace {

struct Unmap {
  void operator()(void* page) const { ::munmap(page, sizeof(std::uint64_t)); }
};

// Empties the open directory `dir` (`path` names it in errors), depth first, without
// following symlinks; a directory that refuses (EACCES: mode 0555 or 0000) gets u+rwx.
void remove_contents(int dir, const std::string& path) {
  int copy = ::openat(dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (copy < 0) throw_errno(path);
  DIR* listing = ::fdopendir(copy);
  if (listing == nullptr) {
    ::close(copy);
    throw_errno(path);
  }
  std::vector<std::string> names;
  while (dirent* e = ::readdir(listing)) {
    std::string name = e->d_name;
    if (name != "." && name != "..") names.push_back(std::move(name));
  }
  ::closedir(listing);
  for (const std::string& name : names) {
    if (::unlinkat(dir, name.c_str(), 0) == 0 || errno == ENOENT) continue;
    if (errno != EISDIR && errno != EPERM) throw_errno("removing " + path + "/" + name);
    UniqueFd child(::openat(dir, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!child && errno == EACCES) {
      ::fchmodat(dir, name.c_str(), 0700, 0);
      child.reset(::openat(dir, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    }
    if (!child) throw_errno("removing " + path + "/" + name);
    ::fchmod(child.get(), 0700);  // entries of a 0555 directory cannot be unlinked
    remove_contents(child.get(), path + "/" + name);
    if (::unlinkat(dir, name.c_str(), AT_REMOVEDIR) != 0) throw_errno("removing " + path + "/" + name);
  }
}

void remove_tree(const std::string& path) {
  UniqueFd dir(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!dir && errno == ENOENT) return;
  if (!dir && errno == ENOTDIR) {
    if (::unlink(path.c_str()) != 0) throw_errno("removing " + path);
    return;
  }
  if (!dir) throw_errno("removing " + path);
  ::fchmod(dir.get(), 0700);
  remove_contents(dir.get(), path);
  dir.reset();
  if (::rmdir(path.c_str()) != 0 && errno != ENOENT) throw_errno("removing " + path);
}

}  // namespace

void unpack_sandbox(const std::string& image_path, const std::string& directory, RootMode mode) {
  RootMode resolved = resolve_root_mode(mode);
  if (resolved != RootMode::fakeroot_subid) {
    squashfs::unpack_to_directory(image_path, directory);
    return;
  }
  run_in_user_namespace(resolved, [&] {
    squashfs::unpack_to_directory(image_path, directory);
    return 0;
  });
}

std::uint64_t pack_sandbox(const std::string& directory, int fd, std::uint64_t offset, RootMode mode,
                           convert::PackOptions options) {
  RootMode resolved = resolve_root_mode(mode);
  if (resolved == RootMode::fakeroot_emulated) {
    options.owner_as_root = ::getuid();
    options.group_as_root = ::getgid();
  }
  if (resolved != RootMode::fakeroot_subid) return convert::pack_directory(directory, fd, offset, options);
  // The size comes back through a shared page: the child's exit status is too small for it.
  void* shared = ::mmap(nullptr, sizeof(std::uint64_t), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (shared == MAP_FAILED) throw_errno("mmap");
  std::unique_ptr<void, Unmap> owner(shared);
  auto* bytes = static_cast<std::uint64_t*>(shared);
  *bytes = 0;
  int status = run_in_user_namespace(resolved, [&] {
    *bytes = convert::pack_directory(directory, fd, offset, options);
    return 0;
  });
  if (status != 0) throw Error("packing " + directory + ": the fakeroot process ended with status " + std::to_string(status));
  return *bytes;
}

void remove_sandbox(const std::string& path, RootMode mode) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0 && errno == ENOENT) return;
  RootMode resolved = mode == RootMode::real_root ? mode : resolve_root_mode(mode);
  if (resolved != RootMode::fakeroot_subid) {
    remove_tree(path);
    return;
  }
  // The top directory's parent belongs to the caller outside; its contents may not.
  run_in_user_namespace(resolved, [&] {
    remove_tree(path);
    return 0;
  });
}

}  // namespace capsa::runtime
