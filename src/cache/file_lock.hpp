#pragma once
// An exclusive lock on a lock file that the kernel (or the network filesystem's lock
// manager) releases when its holder dies, however it dies. The cache takes one per
// entry, so that of many processes on many nodes exactly one produces a missing entry.

#include <optional>
#include <string>

#include "util/fd.hpp"

namespace capsa::cache {

// Which locking call this process ended up using (see file_lock.cpp for the choice).
enum class LockKind {
  ofd,    // fcntl(F_OFD_SETLK): whole-file POSIX lock owned by the open file description
  flock,  // flock(2): kernels before 3.15 (no OFD locks)
  none,   // the filesystem refuses every lock (Lustre mounted noflock): no exclusion
};

enum class LockMode {
  exclusive,  // producing or removing the entry
  shared,     // using the entry: many readers at once, no remover meanwhile
};

class FileLock {
 public:
  // One attempt, never blocks: the lock, or nullopt when another holder has it. Creates
  // the lock file (mode 0666 minus umask) and tolerates it being removed concurrently.
  // A shared lock in a cache the caller may not write (a read-only site cache) comes
  // back as LockKind::none instead of failing.
  static std::optional<FileLock> try_acquire(const std::string& path, LockMode mode = LockMode::exclusive);

  FileLock(FileLock&&) noexcept = default;
  FileLock& operator=(FileLock&&) noexcept = default;
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;
  ~FileLock() = default;  // closing the descriptor is what releases the lock

  const std::string& path() const { return path_; }
  LockKind kind() const { return kind_; }
  // False when the filesystem gave no lock at all (LockKind::none).
  bool exclusive() const { return kind_ != LockKind::none; }

  // Records "host pid" in the lock file, for the message of a process that waits.
  void record_holder();
  void release() { fd_.reset(); }
  // Gives up the descriptor without releasing the lock: it stays held as long as the
  // descriptor is open, also in what this process execs into (see hold_across_exec).
  int release_descriptor() { return fd_.release(); }
  // Removes the lock file while still holding it, then releases. Safe against processes
  // that opened the old file meanwhile: they notice the unlink and start over.
  void unlink_and_release();

 private:
  FileLock(std::string path, UniqueFd fd, LockKind kind)
      : path_(std::move(path)), fd_(std::move(fd)), kind_(kind) {}

  std::string path_;
  UniqueFd fd_;
  LockKind kind_;
};

// "host pid" of the recorded holder of the lock file at `path`, or "" when unknown.
std::string read_lock_holder(const std::string& path);

}  // namespace capsa::cache
