// Which lock, and why.
//
// The cache lives in the user's home or on a scratch filesystem, often NFS, Lustre or
// GPFS shared by every node of a job. The lock must therefore be one that the kernel
// drops when the holder dies (kill -9, OOM killer, node reboot: no stale lock files to
// expire by age, unlike O_EXCL lock files) and that the filesystem makes coherent
// across nodes:
//  * NFS: since Linux 2.6.12 the client implements flock() by taking a whole-file
//    POSIX byte-range lock on the server (nfs(5), "local_lock"), so POSIX locks are
//    the real thing and flock() is an emulation of them; both reach NLM/NFSv4 LOCK.
//  * Lustre: with the `flock` mount option, flock() and fcntl() locks are coherent
//    across all clients; `localflock` makes them node-local; `noflock` makes every
//    locking call fail (mount.lustre(8)).
//  * GPFS and most cluster filesystems implement POSIX fcntl() byte-range locks
//    through their distributed lock manager.
// So capsa takes a POSIX write lock over the whole file, in its OFD variant
// (F_OFD_SETLK, Linux 3.15): classic F_SETLK locks belong to the process, so two
// threads of one process never exclude each other and closing *any* descriptor of the
// file drops the lock; OFD locks belong to the open file description, exactly like one
// FileLock object. Kernels without OFD locks answer EINVAL: then flock(2), which has
// the same ownership model. When the filesystem refuses locks altogether (ENOLCK,
// ENOSYS, EOPNOTSUPP) there is no exclusion to be had; the caller is told
// (LockKind::none) and falls back to private temporary names: duplicated work, but
// still atomic publishing and never a corrupt entry.
#include "cache/file_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "cache/fs_ops.hpp"
#include "util/error.hpp"

namespace capsa::cache {
namespace {

bool means_no_locking(int error) { return error == ENOLCK || error == ENOSYS || error == EOPNOTSUPP; }

// The lock kind obtained, or nullopt when another holder has the lock.
std::optional<LockKind> try_flock(int fd, LockMode mode, const std::string& path) {
  while (::flock(fd, (mode == LockMode::shared ? LOCK_SH : LOCK_EX) | LOCK_NB) != 0) {
    if (errno == EINTR) continue;
    if (errno == EWOULDBLOCK) return std::nullopt;
    if (means_no_locking(errno) || errno == EINVAL) return LockKind::none;
    throw_errno("locking " + path);
  }
  return LockKind::flock;
}

std::optional<LockKind> try_lock(int fd, LockMode mode, const std::string& path) {
  struct flock whole_file {};
  whole_file.l_type = mode == LockMode::shared ? F_RDLCK : F_WRLCK;
  whole_file.l_whence = SEEK_SET;  // l_start = l_len = 0: the whole file, however long
  while (::fcntl(fd, F_OFD_SETLK, &whole_file) != 0) {
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EACCES) return std::nullopt;
    if (errno == EINVAL) return try_flock(fd, mode, path);
    if (means_no_locking(errno)) return LockKind::none;
    throw_errno("locking " + path);
  }
  return LockKind::ofd;
}

// Whether fd is still the file at `path`: another holder may have removed the lock
// file (cache clean) between our open() and our lock.
bool still_linked(int fd, const std::string& path) {
  struct stat held {}, named {};
  if (::fstat(fd, &held) != 0) throw_errno("fstat " + path);
  if (::stat(path.c_str(), &named) != 0) {
    if (errno == ENOENT) return false;
    throw_errno("stat " + path);
  }
  return held.st_dev == named.st_dev && held.st_ino == named.st_ino;
}

}  // namespace

std::optional<FileLock> FileLock::try_acquire(const std::string& path, LockMode mode) {
  // Each retry means someone unlinked the file we had just opened; a handful is plenty.
  for (int attempt = 0; attempt < 64; ++attempt) {
    int raw = ::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (raw < 0) {
      if (mode == LockMode::shared && (errno == EACCES || errno == EROFS || errno == EPERM))
        return FileLock(path, UniqueFd(), LockKind::none);
      throw_errno("opening lock file " + path);
    }
    UniqueFd fd(raw);
    std::optional<LockKind> kind = try_lock(fd.get(), mode, path);
    if (!kind) return std::nullopt;
    if (*kind == LockKind::none || still_linked(fd.get(), path)) return FileLock(path, std::move(fd), *kind);
  }
  throw Error("lock file " + path + " keeps being removed while it is taken; is a cache clean looping?");
}

void FileLock::record_holder() {
  std::string holder = host_name() + " " + std::to_string(::getpid()) + "\n";
  // Informational only (shown to waiting processes): a failure here must not fail a pull.
  if (::ftruncate(fd_.get(), 0) == 0) (void)!::pwrite(fd_.get(), holder.data(), holder.size(), 0);
}

void FileLock::unlink_and_release() {
  if (::unlink(path_.c_str()) != 0 && errno != ENOENT) throw_errno("removing lock file " + path_);
  fd_.reset();
}

std::string read_lock_holder(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return "";
  UniqueFd guard(fd);
  char buf[300] = {};
  ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
  if (n <= 0) return "";
  std::string holder(buf, static_cast<std::size_t>(n));
  while (!holder.empty() && (holder.back() == '\n' || holder.back() == '\0')) holder.pop_back();
  return holder.find('\n') == std::string::npos ? holder : "";
}

}  // namespace capsa::cache
