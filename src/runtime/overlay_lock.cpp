#include "runtime/overlay_lock.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <sstream>
#include <thread>

#include "util/detached_child.hpp"
#include "util/error.hpp"
#include "util/fd.hpp"
#include "util/process.hpp"

namespace capsa::runtime {
namespace {

// The pid /proc/locks gives for a flock on (dev, ino) that conflicts with the one wanted
// (any, for an exclusive lock; a WRITE lock, for a shared one) — the process that took it, which
// is the container's own process (capsa executes the command in the process that locked)
// — or -1. Its device is printed as hex major:minor.
long lock_holder(const struct stat& locked, bool writable) {
  std::ifstream locks("/proc/locks");
  std::string line;
  while (std::getline(locks, line)) {
    if (line.find("->") != std::string::npos) continue;  // a waiter, not a holder
    std::istringstream fields(line);
    std::string id, kind, advisory, mode, device;
    long pid = -1;
    if (!(fields >> id >> kind >> advisory >> mode >> pid >> device) || kind != "FLOCK") continue;
    if (!writable && mode != "WRITE") continue;
    unsigned major = 0, minor = 0;
    unsigned long long inode = 0;
    if (std::sscanf(device.c_str(), "%x:%x:%llu", &major, &minor, &inode) != 3) continue;
    if (::makedev(major, minor) == locked.st_dev && inode == locked.st_ino) return pid;
  }
  return -1;
}

// Whether `pid` is a live process (not gone, not a zombie waiting to be reaped).
bool alive(long pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  auto paren = text.rfind(')');
  return paren != std::string::npos && paren + 2 < text.size() && text[paren + 2] != 'Z';
}

}  // namespace

OverlayLock OverlayLock::take(const std::string& path, bool writable) {
  OverlayLock lock;
  lock.fd_.reset(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!lock.fd_) throw_errno("--overlay " + path);
  struct stat st {};
  if (::fstat(lock.fd_.get(), &st) != 0) throw_errno("--overlay " + path);
  // A container that has just ended still holds its lock for a moment: its holder gets
  // its parent-death signal, its fuse2fs writes back and exits. That is waited for (the
  // process that took the lock is gone); a live holder is refused at once.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (::flock(lock.fd_.get(), (writable ? LOCK_EX : LOCK_SH) | LOCK_NB) != 0) {
    if (errno == EINTR) continue;
    if (errno != EWOULDBLOCK) throw_errno("locking the overlay " + path);
    const long holder = lock_holder(st, writable);
    if ((holder <= 0 || !alive(holder)) && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      continue;
    }
    std::string who = holder > 0 ? "process " + std::to_string(holder) : "a container that is ending";
    std::string message = "overlay " + path;
    message.append(" is in use by another container (").append(who);
    message += writable ? "): a writable overlay has one user at a time (add :ro to share it read-only, or wait)"
                        : ") that writes to it: wait until it ends";
    throw Error(message);
  }
  return lock;
}

void hold_for_container(const std::vector<OverlayLock>& locks) {
  if (locks.empty()) return;
  std::vector<int> locked;
  locked.reserve(locks.size());
  for (const OverlayLock& lock : locks) locked.push_back(lock.fd());
  const EndWatch container = EndWatch::of_this_process();  // this process becomes the container's command
  // The holder must be no child of the command: a program that reaps every child it has
  // (busybox tar does) would wait for it forever. So the child forks the holder and ends
  // at once; the holder, reparented, watches the container's process through a pidfd.
  Process starter = Process::start(
      [&locked, &container] {
        Process::start(
            [&locked, &container] {
              // Only the locks stay open: no pipe of the caller waits on this process.
              for (int fd = 0; fd < 1024; ++fd)
                if (fd != container.descriptor() && std::find(locked.begin(), locked.end(), fd) == locked.end())
                  ::close(fd);
              // The terminal's and the job's signals are the container's to act on.
              for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGTSTP, SIGTTIN, SIGTTOU, SIGUSR1, SIGUSR2})
                ::signal(sig, SIG_IGN);
              container.await();
              return 0;
            },
            {.name = "the overlay lock holder"})
            .release();
        return 0;
      },
      {.name = "the overlay lock holder's starter"});
  starter.wait();
}

}  // namespace capsa::runtime
