// `clean` removes what it is asked to, and never what another process is producing or
// using; temporaries of dead processes are swept, those of live ones kept.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "cache/cache.hpp"
#include "processes.hpp"
#include "support/temp_dir.hpp"

namespace capsa::cache {
namespace {

using capsa::test::TempDir;

Key blob_key(char c) { return Key::blob("sha256:" + std::string(64, c)); }
Key sif_key(char c) { return Key::sif("sha256:" + std::string(64, c), "linux", "amd64"); }

std::string add(Cache& cache, const Key& key, const std::string& content) {
  EntryUse entry = cache.wait_or_produce(key, [&](ProducerLock& lock) { std::ofstream(lock.partial_path()) << content; });
  return entry.path();
}

void age(const std::string& path, int days) {
  timespec then{std::time(nullptr) - days * 24 * 3600, 0};
  const timespec times[2] = {then, then};
  ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), times, 0), 0);
}

std::vector<std::string> names(const std::vector<Entry>& entries) {
  std::vector<std::string> out;
  for (const Entry& e : entries) out.push_back(e.name + (e.partial ? ".partial" : ""));
  std::sort(out.begin(), out.end());
  return out;
}

// Every file under dir whose name ends in `suffix`.
int count_files(const std::string& dir, const std::string& suffix) {
  int count = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir))
    count += entry.path().string().ends_with(suffix);
  return count;
}

TEST(Clean, EverythingByDefaultAndNoLockFilesLeft) {
  TempDir dir;
  Cache cache(dir / "cache");
  add(cache, blob_key('a'), "blob");
  add(cache, sif_key('b'), "sif");
  CleanReport report = cache.clean({});
  EXPECT_EQ(report.removed.size(), 2u);
  EXPECT_EQ(report.removed_bytes, 7u);
  EXPECT_TRUE(cache.list().empty());
  EXPECT_EQ(count_files(cache.root(), ".lock"), 0);
  add(cache, blob_key('a'), "again");  // the cache still works afterwards
  EXPECT_TRUE(cache.has(blob_key('a')));
}

TEST(Clean, DryRunRemovesNothing) {
  TempDir dir;
  Cache cache(dir / "cache");
  add(cache, blob_key('a'), "blob");
  CleanReport report = cache.clean({.dry_run = true});
  EXPECT_EQ(names(report.removed), std::vector<std::string>{blob_key('a').name()});
  EXPECT_TRUE(cache.has(blob_key('a')));
}

TEST(Clean, TypeFilter) {
  TempDir dir;
  Cache cache(dir / "cache");
  add(cache, blob_key('a'), "blob");
  add(cache, sif_key('b'), "sif");
  CleanReport report = cache.clean({.types = {EntryType::sif}});
  EXPECT_EQ(names(report.removed), std::vector<std::string>{sif_key('b').name()});
  EXPECT_TRUE(cache.has(blob_key('a')));
  EXPECT_FALSE(cache.has(sif_key('b')));
}

TEST(Clean, DaysCountsFromTheLastUse) {
  TempDir dir;
  Cache cache(dir / "cache");
  std::string old_unused = add(cache, blob_key('a'), "a");
  std::string old_but_used = add(cache, blob_key('b'), "b");
  add(cache, blob_key('c'), "c");
  age(old_unused, 10);
  age(old_but_used, 10);
  ASSERT_TRUE(cache.use(blob_key('b')));  // used today
  CleanReport report = cache.clean({.days = 5});
  EXPECT_EQ(names(report.removed), std::vector<std::string>{blob_key('a').name()});
  EXPECT_EQ(names(cache.list()), (std::vector<std::string>{blob_key('b').name(), blob_key('c').name()}));
}

TEST(Clean, KeepsWhatIsBeingProducedOrUsed) {
  TempDir dir;
  Cache cache(dir / "cache");
  add(cache, blob_key('a'), "in use by another process");
  add(cache, blob_key('c'), "unused");
  // Another process uses entry a until told to stop.
  int ready[2], stop[2];
  ASSERT_EQ(::pipe2(ready, O_CLOEXEC), 0);
  ASSERT_EQ(::pipe2(stop, O_CLOEXEC), 0);
  pid_t user = test::spawn([&] {
    Cache mine(dir / "cache");
    std::optional<EntryUse> entry = mine.use(blob_key('a'));
    (void)!::write(ready[1], "r", 1);
    char byte;
    (void)!::read(stop[0], &byte, 1);
    return entry && test::read_all(entry->fd()) == "in use by another process";
  });
  char byte;
  ASSERT_EQ(::read(ready[0], &byte, 1), 1);
  // And this process is producing b, half written.
  std::optional<ProducerLock> producer = cache.begin_produce(blob_key('b'));
  ASSERT_TRUE(producer);
  std::ofstream(producer->partial_path()) << "half";

  CleanReport report = cache.clean({});
  EXPECT_EQ(names(report.removed), std::vector<std::string>{blob_key('c').name()});
  EXPECT_EQ(names(report.in_use), (std::vector<std::string>{blob_key('a').name(), blob_key('b').name() + ".partial"}));
  EXPECT_TRUE(cache.has(blob_key('a')));
  EXPECT_EQ(capsa::test::read_file(producer->partial_path()), "half");

  // The producer finishes undisturbed; the user lets go; then both can be cleaned.
  producer->publish();
  (void)!::write(stop[1], "s", 1);
  EXPECT_EQ(test::wait_for(user), 0);
  EXPECT_EQ(names(cache.clean({}).removed), (std::vector<std::string>{blob_key('a').name(), blob_key('b').name()}));
  for (int fd : {ready[0], ready[1], stop[0], stop[1]}) ::close(fd);
}

TEST(Clean, RemovesThePartialOfADeadProducer) {
  TempDir dir;
  Cache cache(dir / "cache");
  {
    std::optional<ProducerLock> producer = cache.begin_produce(sif_key('d'));
    std::ofstream(producer->partial_path()) << "abandoned";
  }
  CleanReport report = cache.clean({});
  EXPECT_EQ(names(report.removed), std::vector<std::string>{sif_key('d').name() + ".partial"});
  EXPECT_EQ(count_files(cache.root(), ".partial"), 0);
  EXPECT_EQ(count_files(cache.root(), ".lock"), 0);
}

TEST(Clean, SweepsTemporariesOfDeadProcessesOnly) {
  TempDir dir;
  Cache cache(dir / "cache");
  int ready[2];
  ASSERT_EQ(::pipe2(ready, O_CLOEXEC), 0);
  pid_t doomed = test::spawn([&] {
    Cache mine(dir / "cache");
    TempItem item = mine.make_temp(".d");
    std::filesystem::create_directory(item.path());
    std::ofstream(item.path() + "/rootfs-file") << "scratch";
    (void)!::write(ready[1], "r", 1);
    for (;;) ::pause();
    return false;
  });
  char byte;
  ASSERT_EQ(::read(ready[0], &byte, 1), 1);
  TempItem mine = cache.make_temp(".partial");
  std::ofstream(mine.path()) << "live";
  ::kill(doomed, SIGKILL);
  EXPECT_EQ(test::wait_for(doomed), 128 + SIGKILL);
  ASSERT_EQ(count_files(cache.root() + "/tmp", ".d"), 1) << "the killed process left its directory";

  cache.sweep_temporaries();
  EXPECT_EQ(count_files(cache.root() + "/tmp", ".d"), 0);
  EXPECT_EQ(count_files(cache.root() + "/tmp", ".d.lock"), 0);
  EXPECT_EQ(capsa::test::read_file(mine.path()), "live");
  std::string path = mine.path();
  { TempItem gone = std::move(mine); }
  EXPECT_FALSE(std::filesystem::exists(path));
  EXPECT_TRUE(std::filesystem::is_empty(cache.root() + "/tmp"));
  ::close(ready[0]);
  ::close(ready[1]);
}

}  // namespace
}  // namespace capsa::cache
