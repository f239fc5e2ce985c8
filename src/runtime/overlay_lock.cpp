#include "runtime/overlay_lock.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "util/error.hpp"
#include "util/process.hpp"

namespace capsa::runtime {
namespace {

// The pid /proc/locks gives for the flock on (dev, ino) — the process that took it, which
// is the container's own process (capsa executes the command in the process that locked)
// — or -1. Its device is printed as hex major:minor.
long lock_holder(const struct stat& locked) {
  std::ifstream locks("/proc/locks");
  std::string line;
  while (std::getline(locks, line)) {
    if (line.find("->") != std::string::npos) continue;  // a waiter, not a holder
    std::istringstream fields(line);
    std::string id, kind, advisory, mode, device;
    long pid = -1;
    if (!(fields >> id >> kind >> advisory >> mode >> pid >> device) || kind != "FLOCK") continue;
    unsigned major = 0, minor = 0;
    unsigned long long inode = 0;
    if (std::sscanf(device.c_str(), "%x:%x:%llu", &major, &minor, &inode) != 3) continue;
    if (::makedev(major, minor) == locked.st_dev && inode == locked.st_ino) return pid;
  }
  return -1;
}

}  // namespace

OverlayLock OverlayLock::take(const std::string& path, bool writable) {
  OverlayLock lock;
  lock.fd_.reset(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!lock.fd_) throw_errno("--overlay " + path);
  while (::flock(lock.fd_.get(), (writable ? LOCK_EX : LOCK_SH) | LOCK_NB) != 0) {
    if (errno == EINTR) continue;
    if (errno != EWOULDBLOCK) throw_errno("locking the overlay " + path);
    struct stat st {};
    long holder = ::fstat(lock.fd_.get(), &st) == 0 ? lock_holder(st) : -1;
    std::string who = holder > 0 ? "process " + std::to_string(holder) : "another process";
    throw Error("overlay " + path + " is in use by another container (" + who + ")" +
                (writable ? ": a writable overlay has one user at a time (add :ro to share it read-only, or wait)"
                          : " that writes to it: wait until it ends"));
  }
  return lock;
}

void hold_for_container(const std::vector<OverlayLock>& locks) {
  if (locks.empty()) return;
  std::vector<int> locked;
  for (const OverlayLock& lock : locks) locked.push_back(lock.fd());
  Process holder = Process::start(
      [&locked] {
        // Only the locks stay open: no pipe of the caller waits on this process.
        for (int fd = 0; fd < 1024; ++fd)
          if (std::find(locked.begin(), locked.end(), fd) == locked.end()) ::close(fd);
        // The terminal's and the job's signals are the container's to act on; this
        // process ends with it (parent-death signal) and not before.
        for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGTSTP, SIGTTIN, SIGTTOU, SIGUSR1, SIGUSR2})
          ::signal(sig, SIG_IGN);
        for (;;) ::pause();
        return 0;
      },
      {.parent_death_signal = SIGKILL, .name = "the overlay lock holder"});
  holder.release();
}

}  // namespace capsa::runtime
