#include "util/open_in_root.hpp"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <vector>

#include "util/fd.hpp"
#include "util/path.hpp"

namespace capsa {
namespace {
constexpr int kMaxSymlinkHops = 40;
}  // namespace

namespace {

// The kernel's own walk (Linux 5.6+): one system call per path where the walk below takes
// an openat and an fstat per component (a container start resolves some 30 paths).
// Returns -2 when the kernel has no openat2.
int open_in_root_by_kernel(int root_fd, const std::string& path, int final_flags) {
  static bool missing = false;
  if (missing) return -2;
  open_how how{};
  how.flags = static_cast<std::uint64_t>(final_flags | O_CLOEXEC);
  how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
  std::string relative =
      path.substr(path.find_first_not_of('/') == std::string::npos ? path.size() : path.find_first_not_of('/'));
  if (relative.empty()) relative = ".";
  for (;;) {
    long fd = ::syscall(SYS_openat2, root_fd, relative.c_str(), &how, sizeof how);
    if (fd >= 0) return static_cast<int>(fd);
    if (errno == EAGAIN || errno == EINTR) continue;  // a concurrent rename: the kernel asks to retry
    if (errno == ENOSYS || errno == EPERM) {          // old kernel, or a seccomp filter that refuses it
      missing = true;
      return -2;
    }
    return -1;
  }
}

}  // namespace

// openat2(RESOLVE_IN_ROOT) does exactly this; the walk below is for kernels before 5.6,
// which clusters still run.
int open_in_root(int root_fd, const std::string& path, int final_flags) {
  if (int fd = open_in_root_by_kernel(root_fd, path, final_flags); fd != -2) return fd;
  return open_in_root_walk(root_fd, path, final_flags);
}

int open_in_root_walk(int root_fd, const std::string& path, int final_flags) {
  std::vector<std::string> pending;
  auto push_components = [&](const std::string& p) {
    std::vector<std::string> parts = path_components(p);
    pending.insert(pending.end(), parts.rbegin(), parts.rend());
  };
  push_components(path);
  std::vector<UniqueFd> stack;  // opened directories from the root down
  auto current = [&] { return stack.empty() ? root_fd : stack.back().get(); };
  int hops = 0;
  while (!pending.empty()) {
    std::string name = pending.back();
    pending.pop_back();
    if (name == ".") continue;
    if (name == "..") {
      if (!stack.empty()) stack.pop_back();
      continue;
    }
    bool last = pending.empty();
    int fd = ::openat(current(), name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return -1;
    UniqueFd opened(fd);
    struct stat st {};
    if (::fstat(fd, &st) != 0) return -1;
    if (S_ISLNK(st.st_mode)) {
      if (++hops > kMaxSymlinkHops) {
        errno = ELOOP;
        return -1;
      }
      char target[4096];
      ssize_t n = ::readlinkat(current(), name.c_str(), target, sizeof target - 1);
      if (n < 0) return -1;
      std::string link(target, static_cast<std::size_t>(n));
      if (!link.empty() && link[0] == '/') stack.clear();
      push_components(link);
      continue;
    }
    if (last) {
      if (final_flags == O_PATH) return opened.release();
      return ::openat(current(), name.c_str(), final_flags | O_NOFOLLOW | O_CLOEXEC);
    }
    if (!S_ISDIR(st.st_mode)) {
      errno = ENOTDIR;
      return -1;
    }
    stack.push_back(std::move(opened));
  }
  return ::fcntl(current(), F_DUPFD_CLOEXEC, 0);
}

}  // namespace capsa
