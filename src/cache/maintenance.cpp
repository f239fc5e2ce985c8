// Listing and cleaning the cache, and the temporaries of tmp/. Nothing here removes a
// file whose lock another process holds: that process is producing or using it.
#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <memory>
#include <random>

#include "cache/cache.hpp"
#include "cache/fs_ops.hpp"
#include "util/error.hpp"

namespace capsa::cache {
namespace {

constexpr std::string_view kLockSuffix = ".lock";
constexpr std::string_view kPartialSuffix = ".partial";
// Without file locks a temporary's owner can only be judged by host+pid, which is
// meaningless for other nodes; what no process has touched for a week is abandoned.
constexpr std::time_t kAbandonedAfter = 7 * 24 * 3600;

// Names in `dir`; an absent directory has none.
std::vector<std::string> names_in(const std::string& dir) {
  std::vector<std::string> names;
  struct CloseDir {
    void operator()(DIR* d) const { ::closedir(d); }
  };
  std::unique_ptr<DIR, CloseDir> handle(::opendir(dir.c_str()));
  if (!handle) {
    if (errno == ENOENT || errno == ENOTDIR) return names;  // absent, or a stray file where a directory goes
    throw_errno("listing " + dir);
  }
  while (const dirent* entry = ::readdir(handle.get())) {
    std::string name = entry->d_name;
    if (name != "." && name != "..") names.push_back(std::move(name));
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::optional<struct stat> lstat_of(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0) return st;
  if (errno == ENOENT) return std::nullopt;
  throw_errno("stat " + path);
}

std::string strip(std::string_view name, std::string_view suffix) {
  return std::string(name.substr(0, name.size() - suffix.size()));
}

// Whether the creator "host-pid-..." of a temporary is a process of this node that is gone.
bool creator_is_dead_here(const std::string& name) {
  std::string prefix = host_name() + "-";
  if (!name.starts_with(prefix)) return false;
  long pid = std::strtol(name.c_str() + prefix.size(), nullptr, 10);
  return pid > 0 && ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH;
}

void unlink_if_present(const std::string& path) {
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) throw_errno("removing " + path);
}

}  // namespace

TempItem::~TempItem() {
  try {
    if (!path_.empty()) remove_tree(path_);
    if (lock_) lock_->unlink_and_release();
  } catch (const Error&) {
    // Left for sweep_temporaries(): a destructor must not throw.
  }
}

TempItem Cache::make_temp(const std::string& suffix) {
  if (suffix.ends_with(kLockSuffix)) throw Error("temporary names may not end in .lock");
  std::random_device random;
  for (;;) {
    char unique[32];
    std::snprintf(unique, sizeof unique, "%08x%08x", random(), random());
    std::string path = root_ + "/tmp/" + host_name() + "-" + std::to_string(::getpid()) + "-" + unique + suffix;
    // The lock comes first: an item without a lock beside it is always garbage.
    std::optional<FileLock> lock = FileLock::try_acquire(path + std::string(kLockSuffix));
    if (lock) return TempItem(path, std::move(lock));
  }
}

void Cache::sweep_temporaries() {
  std::string dir = root_ + "/tmp/";
  std::time_t now = std::time(nullptr);
  for (const std::string& name : names_in(dir)) {
    if (name.ends_with(kLockSuffix)) {
      std::string item = dir + strip(name, kLockSuffix);
      std::optional<FileLock> lock = FileLock::try_acquire(dir + name);
      if (!lock) continue;  // its creator is alive
      if (!lock->exclusive()) {
        auto st = lstat_of(dir + name);
        bool abandoned = st && now - st->st_mtime > kAbandonedAfter;
        if (!abandoned && !creator_is_dead_here(name)) continue;
      }
      remove_tree(item);
      lock->unlink_and_release();
    } else if (!lstat_of(dir + name + std::string(kLockSuffix))) {
      remove_tree(dir + name);
    }
  }
}

std::vector<Entry> Cache::list(std::optional<EntryType> only) const {
  std::vector<std::string> dirs;
  if (!only || *only == EntryType::sif) dirs.push_back("sif");
  if (!only || *only == EntryType::blob)
    for (const std::string& algorithm : names_in(root_ + "/blobs")) dirs.push_back("blobs/" + algorithm);

  std::vector<Entry> entries;
  for (const std::string& dir : dirs) {
    for (const std::string& name : names_in(root_ + "/" + dir)) {
      bool partial = name.ends_with(kPartialSuffix);
      std::optional<Key> key = Key::from_relative_path(dir + "/" + (partial ? strip(name, kPartialSuffix) : name));
      if (!key) continue;  // lock files, temporaries of other tools
      std::string path = root_ + "/" + dir + "/" + name;
      std::optional<struct stat> st = lstat_of(path);
      if (!st || !S_ISREG(st->st_mode)) continue;
      entries.push_back(Entry{key->type(), key->name(), path, static_cast<std::uint64_t>(st->st_size),
                              st->st_mtime, std::max(st->st_atime, st->st_mtime), partial});
    }
  }
  return entries;
}

std::uint64_t Cache::total_size() const {
  std::uint64_t total = 0;
  for (const Entry& entry : list()) total += entry.size;
  return total;
}

CleanReport Cache::clean(const CleanOptions& options) {
  if (!options.dry_run) sweep_temporaries();
  CleanReport report;
  std::time_t now = std::time(nullptr);
  for (const Entry& entry : list()) {
    if (!options.types.empty() &&
        std::find(options.types.begin(), options.types.end(), entry.type) == options.types.end())
      continue;
    if (options.days && now - entry.last_used < static_cast<std::time_t>(*options.days) * 24 * 3600) continue;
    std::string final_path = entry.partial ? strip(entry.path, kPartialSuffix) : entry.path;
    std::string lock = final_path + std::string(kLockSuffix);
    std::optional<FileLock> held = FileLock::try_acquire(lock);
    if (!held) {
      report.in_use.push_back(entry);
      continue;
    }
    if (!options.dry_run) {
      unlink_if_present(entry.path);
      // The lock file goes with the last file of its entry; held while removed, so that
      // a process that opened it meanwhile notices and takes the new one.
      if (!lstat_of(final_path) && !lstat_of(final_path + std::string(kPartialSuffix))) held->unlink_and_release();
    }
    report.removed.push_back(entry);
    report.removed_bytes += entry.size;
  }
  return report;
}

}  // namespace capsa::cache
