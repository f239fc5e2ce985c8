#pragma once
// The content-addressed cache shared by `pull` and `exec docker://`: registry blobs by
// digest and finished SIFs by manifest digest + platform. Any number of processes, on
// one node or on many nodes sharing the directory, may use it at once:
//  * a missing entry is produced by exactly one of them (a lock per entry), the others
//    wait and then use what it published;
//  * an entry appears only complete (written as <entry>.partial, fsync'ed, renamed);
//  * a producer that dies loses its lock with its life; its .partial stays and the next
//    producer may resume it;
//  * `clean` removes only entries that nobody is producing or using.
// Layout and policy: docs/cache.md.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <ctime>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cache/file_lock.hpp"
#include "cache/key.hpp"
#include "cache/location.hpp"
#include "util/fd.hpp"

namespace capsa::cache {

struct WaitOptions {
  // How long to wait while another process holds the entry. nullopt waits as long as
  // the holder lives: a dead holder releases its lock, a slow download is not an error.
  std::optional<std::chrono::milliseconds> timeout;
  // Called once, when this process starts waiting; `holder` is "host pid" or "".
  std::function<void(const Key& key, const std::string& holder)> on_wait;
};

// A temporary file or directory under tmp/, removed on destruction. Its name carries
// host and pid; a lock beside it tells `clean` whether its creator is still alive.
class TempItem {
 public:
  TempItem(TempItem&& other) noexcept : path_(std::exchange(other.path_, {})), lock_(std::move(other.lock_)) {}
  TempItem& operator=(TempItem&&) = delete;
  ~TempItem();
  // Not created: the caller makes a file or a directory there.
  const std::string& path() const { return path_; }
  // Gives up ownership (the item was renamed elsewhere).
  void release() { path_.clear(); }

 private:
  friend class Cache;
  TempItem(std::string path, std::optional<FileLock> lock) : path_(std::move(path)), lock_(std::move(lock)) {}
  std::string path_;
  std::optional<FileLock> lock_;
};

// The right to produce one missing entry. Destroyed without publish(), it leaves the
// partial file for the next producer to resume (or discard) and releases the lock.
class ProducerLock {
 public:
  const Key& key() const { return key_; }
  // Where to write: created by the caller. It may hold what a killed producer wrote:
  // resume it (a blob download) or open it with O_TRUNC (a conversion). In a cache whose
  // filesystem refuses locks this is a fresh private name under tmp/.
  const std::string& partial_path() const { return partial_path_; }
  const std::string& final_path() const { return final_path_; }
  // False when the filesystem gives no locks: others may be producing the same entry.
  bool exclusive() const { return lock_.exclusive(); }

  // Makes the partial file the entry: fsync, rename, fsync of the directory; then
  // releases the lock. Returns final_path().
  std::string publish();
  bool published() const { return published_; }
  // Removes the partial file (its content is wrong and must not be resumed).
  void discard_partial();

 private:
  friend class Cache;
  ProducerLock(Key key, FileLock lock, std::string final_path, std::string partial_path, std::optional<TempItem> temp)
      : key_(std::move(key)), lock_(std::move(lock)), final_path_(std::move(final_path)),
        partial_path_(std::move(partial_path)), private_partial_(std::move(temp)) {}

  Key key_;
  FileLock lock_;
  std::string final_path_;
  std::string partial_path_;
  std::optional<TempItem> private_partial_;
  bool published_ = false;
};

// A published entry held open for use: while it lives, `clean` leaves the entry alone
// (a running container on another node would otherwise lose its image on NFS).
class EntryUse {
 public:
  const Key& key() const { return key_; }
  const std::string& path() const { return path_; }
  int fd() const { return fd_.get(); }  // read-only, positioned at 0

 private:
  friend class Cache;
  EntryUse(Key key, std::string path, UniqueFd fd, FileLock lock)
      : key_(std::move(key)), path_(std::move(path)), fd_(std::move(fd)), lock_(std::move(lock)) {}
  Key key_;
  std::string path_;
  UniqueFd fd_;
  FileLock lock_;
};

struct Entry {
  EntryType type;
  std::string name;        // Key::name()
  std::string path;
  std::uint64_t size = 0;
  std::time_t created = 0;    // when it was published (mtime)
  std::time_t last_used = 0;  // latest use recorded by use()/get(), at least `created`
  bool partial = false;       // an unfinished download or conversion
};

struct CleanOptions {
  std::optional<int> days;          // only entries not used for at least this many days
  std::vector<EntryType> types;     // empty: every type
  bool dry_run = false;             // report what would go, remove nothing
};

struct CleanReport {
  std::vector<Entry> removed;   // (dry run: would be removed)
  std::vector<Entry> in_use;    // kept: another process is using or producing them
  std::uint64_t removed_bytes = 0;
};

// Methods may be called from several threads at once (parallel blob downloads): the
// exclusion between them is the same per-entry lock as between processes.
class Cache {
 public:
  // Opens the cache at `root`, creating it (mode 0700) and its layout as needed.
  explicit Cache(std::string root);
  // The cache that the environment names (resolve_cache_location).
  static Cache open_default();

  const std::string& root() const { return root_; }
  std::string path_of(const Key& key) const { return root_ + "/" + key.relative_path(); }

  bool has(const Key& key) const;
  // Opens a published entry for use and records the use; nullopt when absent. Waits
  // (per `wait`) while a clean is removing it or a producer holds it.
  std::optional<EntryUse> use(const Key& key, const WaitOptions& wait = {}) const;
  // Path of a published entry, recording the use; for callers that copy it right away.
  std::optional<std::string> get(const Key& key) const;
  // Stores the bytes readable from `source_fd` (from its current position to the end)
  // as the entry, unless it is already there. The caller has verified the digest.
  std::string put(const Key& key, int source_fd, const WaitOptions& wait = {});

  // nullopt: the entry exists (maybe after waiting for another producer to publish it).
  // Otherwise this process is the producer.
  std::optional<ProducerLock> begin_produce(const Key& key, const WaitOptions& wait = {});
  // The entry, produced by `produce` here if no other process has it or is making it.
  // `produce` writes lock.partial_path() (publishing is done for it if it does not).
  EntryUse wait_or_produce(const Key& key, const std::function<void(ProducerLock&)>& produce,
                           const WaitOptions& wait = {});

  // A private temporary name under tmp/ (same filesystem as the entries).
  TempItem make_temp(const std::string& suffix = "");

  std::vector<Entry> list(std::optional<EntryType> only = std::nullopt) const;
  std::uint64_t total_size() const;
  CleanReport clean(const CleanOptions& options);
  // Removes what dead processes left in tmp/ (and, without locks, what is a week old).
  void sweep_temporaries();

 private:
  std::string lock_path(const Key& key) const { return path_of(key) + ".lock"; }
  std::string partial_path(const Key& key) const { return path_of(key) + ".partial"; }
  void warn_once_no_locking();

  std::string root_;
  std::shared_ptr<std::atomic<bool>> warned_no_locking_ = std::make_shared<std::atomic<bool>>(false);
};

// Marks the published entry at `entry_path` in use for the life of this process and of
// what it execs into (a container run from the cache, `exec docker://`): a shared lock on
// its lock file, through a descriptor left open across exec, so that `clean` keeps the
// image while the container or any process it started runs. Waits while a clean holds
// the entry; throws when the entry is gone (removed meanwhile). Returns the descriptor,
// or -1 when the cache's filesystem gives no locks.
int hold_across_exec(const std::string& entry_path);

// Puts a copy of `source` at `destination` (mode `mode` minus umask): a reflink where
// the filesystem shares extents (FICLONE: btrfs, XFS), else copy_file_range (server-side
// copy on NFS 4.2), else read/write; through a temporary name and rename, so the
// destination never holds a partial file. `replace` false refuses an existing one.
void materialize(int source_fd, const std::string& destination, unsigned mode, bool replace);

}  // namespace capsa::cache
