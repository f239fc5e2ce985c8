#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "cache/cache.hpp"
#include "util/error.hpp"

namespace capsa::cache {

int hold_across_exec(const std::string& entry_path) {
  const std::string lock_path = entry_path + ".lock";
  // A clean or a producer holds the lock exclusively for moments only (one removal, one
  // publish); a minute of waiting is a lock that will not come.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(1);
  std::optional<FileLock> lock;
  while (!(lock = FileLock::try_acquire(lock_path, LockMode::shared))) {
    if (std::chrono::steady_clock::now() > deadline)
      throw Error(entry_path + " stays locked by another process (" + read_lock_holder(lock_path) + ")");
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  struct stat st {};
  if (::stat(entry_path.c_str(), &st) != 0)
    throw Error(entry_path + " was removed from the cache (by `capsa cache clean`?) before the container started; "
                "run the command again");
  if (!lock->exclusive()) return -1;  // no locks on this filesystem: nothing to hold
  int fd = lock->release_descriptor();
  // Inherited by the container: the lock lives as long as any process holding it.
  if (::fcntl(fd, F_SETFD, 0) != 0) throw_errno("keeping the lock on " + entry_path);
  return fd;
}

}  // namespace capsa::cache
