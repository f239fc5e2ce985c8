// Producing and using entries. The protocol, per entry E with lock file E.lock:
//   producer: exclusive lock on E.lock; E exists? done. Else write E.partial, fsync,
//             rename to E, fsync the directory, unlock.
//   user:     shared lock on E.lock; open E; keep the lock while using it.
//   clean:    exclusive lock (so no user and no producer); unlink E, then E.lock.
// Renaming within one directory is atomic on every POSIX filesystem, NFS included, so
// a name that exists always names a complete file.
#include "cache/cache.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <filesystem>

#include "cache/fs_ops.hpp"
#include "cache/waiter.hpp"
#include "util/atomic_file.hpp"
#include "util/error.hpp"
#include "util/log.hpp"

namespace capsa::cache {
namespace {

constexpr unsigned kPrivateDirMode = 0700;  // the cache root, as Apptainer's cache/
constexpr unsigned kInnerDirMode = 0755;    // minus umask; private anyway below a 0700 root

bool exists(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0) return true;
  if (errno == ENOENT) return false;
  throw_errno("stat " + path);
}

std::string parent_of(const std::string& path) { return std::filesystem::path(path).parent_path().string(); }

// Marks a use for `clean --days`: the atime, set explicitly because noatime/relatime
// mounts do not update it on reads. Best effort: a read-only cache is still usable.
void record_use(int fd) {
  const timespec times[2] = {{0, UTIME_NOW}, {0, UTIME_OMIT}};
  (void)::futimens(fd, times);
}

void copy_stream(int in, int out, const std::string& what) {
  char buf[1 << 16];
  for (;;) {
    ssize_t n = ::read(in, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw_errno("reading the data for " + what);
    }
    if (n == 0) return;
    write_all(out, std::span(reinterpret_cast<const std::uint8_t*>(buf), static_cast<std::size_t>(n)));
  }
}

// A cache directory that every user may write lets anyone put a file there under the
// name of an image another user will run (entries are trusted once published): refused.
// A group-writable one is a deliberately shared cache, whose group is trusted.
void refuse_world_writable(const std::string& dir) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) throw_errno("stat " + dir);
  if (st.st_mode & S_IWOTH) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    throw Error(dir + " is writable by every user (mode " + mode +
                "): anyone could plant an image there; run `chmod o-w " + dir +
                "` or choose another cache directory (CAPSA_CACHEDIR)");
  }
}

// The cache's root decides who may change what the cache holds: its owner can rename or
// replace anything in it whatever the modes. A root of the caller's is the caller's
// cache; one of root's is the administrator's, shared on purpose (docs/cache.md). Any
// other owner made the directory where the caller's cache was going to be (a path in a
// shared place, made first): refused, for root as for users.
void refuse_foreign_root(const std::string& dir) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) throw_errno("stat " + dir);
  if (st.st_uid == ::geteuid() || st.st_uid == 0) return;
  throw Error(dir + " belongs to uid " + std::to_string(st.st_uid) +
              ", not to you or root: its owner could plant an image there; choose a cache directory of your own "
              "(CAPSA_CACHEDIR), or have the administrator make a root-owned shared cache");
}

void write_cachedir_tag(const std::string& root) {
  // https://bford.info/cachedir/: backup tools (tar --exclude-caches, borg, restic) skip it.
  std::string tag = root + "/CACHEDIR.TAG";
  if (exists(tag)) return;
  static constexpr char kTag[] =
      "Signature: 8a477f597d28d172789f06886806bc55\n"
      "# This file is a cache directory tag created by capsa; see docs/cache.md.\n";
  AtomicFile file(tag, 0644);
  write_all(file.fd(), std::span(reinterpret_cast<const std::uint8_t*>(kTag), sizeof kTag - 1));
  try {
    file.commit(/*replace=*/false);
  } catch (const SystemError& e) {
    if (e.errno_value() != EEXIST) throw;  // another process wrote it first
  }
}

}  // namespace

Cache::Cache(std::string root) : root_(std::move(root)) {
  while (root_.size() > 1 && root_.back() == '/') root_.pop_back();
  with_context("cache " + root_, [&] {
    ensure_directory(root_, kPrivateDirMode);
    refuse_foreign_root(root_);
    refuse_world_writable(root_);
    for (const char* dir : {"/blobs", "/blobs/sha256", "/sif", "/tmp"}) {
      ensure_directory(root_ + dir, kInnerDirMode);
      refuse_world_writable(root_ + dir);
    }
    write_cachedir_tag(root_);
  });
}

Cache Cache::open_default() { return Cache(resolve_cache_location().root); }

void Cache::warn_once_no_locking() {
  if (warned_no_locking_->exchange(true)) return;
  log::warning("the filesystem of cache " + root_ +
          " refuses file locks (Lustre without -o flock?); concurrent pulls of one image will each download it");
}

bool Cache::has(const Key& key) const { return exists(path_of(key)); }

std::optional<EntryUse> Cache::use(const Key& key, const WaitOptions& wait) const {
  std::string path = path_of(key);
  if (!exists(path)) return std::nullopt;  // no lock file is created for what is absent
  Waiter waiter(key, lock_path(key), root_, wait);
  for (;;) {
    if (auto lock = FileLock::try_acquire(lock_path(key), LockMode::shared)) {
      int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
      if (fd < 0) {
        if (errno == ENOENT) return std::nullopt;  // cleaned while we waited
        throw_errno("opening cache entry " + path);
      }
      record_use(fd);
      return EntryUse(key, path, UniqueFd(fd), std::move(*lock));
    }
    waiter.pause();
  }
}

std::optional<std::string> Cache::get(const Key& key) const {
  std::optional<EntryUse> entry = use(key);
  if (!entry) return std::nullopt;
  return entry->path();
}

std::optional<ProducerLock> Cache::begin_produce(const Key& key, const WaitOptions& wait) {
  std::string final_path = path_of(key);
  ensure_directory(parent_of(final_path), kInnerDirMode);
  Waiter waiter(key, lock_path(key), root_, wait);
  for (;;) {
    if (exists(final_path)) return std::nullopt;
    if (auto lock = FileLock::try_acquire(lock_path(key), LockMode::exclusive)) {
      if (exists(final_path)) return std::nullopt;  // published between our check and our lock
      if (!lock->exclusive()) {
        warn_once_no_locking();
        TempItem temp = make_temp(".partial");
        std::string partial = temp.path();
        return ProducerLock(key, std::move(*lock), final_path, partial, std::move(temp));
      }
      lock->record_holder();
      return ProducerLock(key, std::move(*lock), final_path, partial_path(key), std::nullopt);
    }
    waiter.pause();
  }
}

EntryUse Cache::wait_or_produce(const Key& key, const std::function<void(ProducerLock&)>& produce,
                               const WaitOptions& wait) {
  // More than one round only when a clean removes the entry between publish and use.
  for (int round = 0; round < 8; ++round) {
    if (auto entry = use(key, wait)) return std::move(*entry);
    if (auto producer = begin_produce(key, wait)) {
      produce(*producer);
      if (!producer->published()) producer->publish();
    }
  }
  throw Error("cache entry " + key.name() + " in " + root_ +
              " keeps disappearing right after it is produced; is `capsa cache clean` running in a loop?");
}

std::string Cache::put(const Key& key, int source_fd, const WaitOptions& wait) {
  std::optional<ProducerLock> producer = begin_produce(key, wait);
  if (!producer) return path_of(key);
  with_context("storing " + key.name() + " in cache " + root_, [&] {
    UniqueFd out = open_file(producer->partial_path(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, 0644);
    copy_stream(source_fd, out.get(), key.name());
  });
  return producer->publish();
}

std::string ProducerLock::publish() {
  with_context("publishing cache entry " + final_path_, [&] {
    UniqueFd partial = open_file(partial_path_, O_RDONLY | O_NOFOLLOW);
    if (::fsync(partial.get()) != 0) throw_errno("fsync " + partial_path_);
    if (::rename(partial_path_.c_str(), final_path_.c_str()) != 0) throw_errno("rename " + partial_path_);
    sync_directory(parent_of(final_path_));
  });
  if (private_partial_) private_partial_->release();
  published_ = true;
  lock_.release();
  return final_path_;
}

void ProducerLock::discard_partial() {
  if (::unlink(partial_path_.c_str()) != 0 && errno != ENOENT) throw_errno("removing " + partial_path_);
}

}  // namespace capsa::cache
