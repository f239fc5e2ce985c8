// Many real processes asking for the same missing entry at once, and producers that
// are killed with SIGKILL in the middle: exactly one produces, everyone gets the whole
// content, and a dead producer's partial file is resumed by the next one.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <thread>

#include "cache/cache.hpp"
#include "processes.hpp"
#include "support/temp_dir.hpp"
#include "util/error.hpp"

namespace capsa::cache {
namespace {

using test::append_line;
using test::count_lines;
using test::pattern;
using test::read_all;
using test::spawn;
using test::wait_for;

const Key kBlob = Key::blob("sha256:" + std::string(64, 'c'));
constexpr std::size_t kSize = 1 << 20;
constexpr std::size_t kChunk = 1 << 14;

struct Production {
  std::string content = pattern(kSize);
  std::string producers_file;   // one line per producer that ran
  std::string resumed_file;     // the offset each producer started from
  std::size_t stall_at = SIZE_MAX;
  int stalled_fd = -1;          // written to once the producer stalls
};

// Writes the content into the partial file from wherever a dead producer stopped,
// in small chunks with a yield between them, so that racers really overlap it.
void produce(ProducerLock& lock, const Production& p) {
  append_line(p.producers_file, std::to_string(::getpid()));
  int fd = ::open(lock.partial_path().c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) throw std::runtime_error("open partial");
  struct stat st {};
  ::fstat(fd, &st);
  std::size_t done = static_cast<std::size_t>(st.st_size);
  append_line(p.resumed_file, std::to_string(done));
  while (done < p.content.size()) {
    std::size_t n = std::min(kChunk, p.content.size() - done);
    if (::pwrite(fd, p.content.data() + done, n, static_cast<off_t>(done)) != static_cast<ssize_t>(n))
      throw std::runtime_error("pwrite");
    done += n;
    if (done >= p.stall_at) {
      ::fsync(fd);
      (void)!::write(p.stalled_fd, "s", 1);
      for (;;) ::pause();  // until SIGKILL
    }
    std::this_thread::yield();
  }
  ::close(fd);
}

// `count` processes start together and each asks for kBlob; returns how many failed.
int race(const std::string& root, const Production& production, int count) {
  test::StartGate gate;
  std::vector<pid_t> racers;
  for (int i = 0; i < count; ++i)
    racers.push_back(spawn([&] {
      gate.wait();
      Cache cache(root);
      EntryUse entry = cache.wait_or_produce(kBlob, [&](ProducerLock& lock) { produce(lock, production); });
      return read_all(entry.fd()) == production.content;
    }));
  gate.open();
  int failed = 0;
  for (pid_t pid : racers) failed += wait_for(pid) != 0;
  return failed;
}

class Race : public ::testing::TestWithParam<int> {};

TEST_P(Race, ExactlyOneProducerAndEveryoneGetsTheWholeEntry) {
  capsa::test::TempDir dir;
  Production production;
  production.producers_file = dir / "producers";
  production.resumed_file = dir / "resumed";
  std::string root = dir / "cache";  // created by the racers themselves, all at once

  EXPECT_EQ(race(root, production, GetParam()), 0);
  EXPECT_EQ(count_lines(production.producers_file), 1);
  Cache cache(root);
  EXPECT_TRUE(cache.has(kBlob));
  std::vector<Entry> entries = cache.list();
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_FALSE(entries[0].partial);
  EXPECT_EQ(entries[0].size, kSize);

  // A second wave finds the entry published: nobody produces again.
  EXPECT_EQ(race(root, production, 8), 0);
  EXPECT_EQ(count_lines(production.producers_file), 1);
}

INSTANTIATE_TEST_SUITE_P(Processes, Race, ::testing::Values(16, 64));

TEST(Race, KilledProducerIsTakenOverAndItsPartialResumed) {
  capsa::test::TempDir dir;
  std::string root = dir / "cache";
  int stalled[2];
  ASSERT_EQ(::pipe2(stalled, O_CLOEXEC), 0);
  Production production;
  production.producers_file = dir / "producers";
  production.resumed_file = dir / "resumed";
  production.stall_at = kSize / 2;
  production.stalled_fd = stalled[1];

  pid_t victim = spawn([&] {
    Cache cache(root);
    std::optional<ProducerLock> lock = cache.begin_produce(kBlob);
    if (lock) produce(*lock, production);
    return false;
  });
  char byte = 0;
  ASSERT_EQ(::read(stalled[0], &byte, 1), 1) << "the first producer died before reaching half";

  // Waiters queue up behind the stalled producer, with the producer-side settings
  // (no stall) for whichever of them takes over.
  Production takeover = production;
  takeover.stall_at = SIZE_MAX;
  test::StartGate gate;
  std::vector<pid_t> waiters;
  for (int i = 0; i < 8; ++i)
    waiters.push_back(spawn([&] {
      gate.wait();
      Cache cache(root);
      EntryUse entry = cache.wait_or_produce(kBlob, [&](ProducerLock& lock) { produce(lock, takeover); });
      return read_all(entry.fd()) == takeover.content;
    }));
  gate.open();

  ::kill(victim, SIGKILL);
  EXPECT_EQ(wait_for(victim), 128 + SIGKILL);
  for (pid_t pid : waiters) EXPECT_EQ(wait_for(pid), 0);

  EXPECT_EQ(count_lines(production.producers_file), 2) << "the victim and exactly one successor";
  EXPECT_EQ(capsa::test::read_file(production.resumed_file), "0\n" + std::to_string(kSize / 2) + "\n")
      << "the successor resumed the victim's partial file";
  Cache cache(root);
  std::vector<Entry> entries = cache.list();
  ASSERT_EQ(entries.size(), 1u) << "no partial file left behind";
  EXPECT_FALSE(entries[0].partial);
  ::close(stalled[0]);
  ::close(stalled[1]);
}

TEST(Race, WaiterWithATimeoutGivesUpNamingTheProducer) {
  capsa::test::TempDir dir;
  Cache cache(dir / "cache");
  std::optional<ProducerLock> held = cache.begin_produce(kBlob);
  ASSERT_TRUE(held);
  // Another process: OFD locks are per open file, but a process is what users run.
  std::string holder_seen_file = dir / "holder";
  pid_t impatient = spawn([&] {
    Cache other(dir / "cache");
    WaitOptions wait;
    wait.timeout = std::chrono::milliseconds(100);
    wait.on_wait = [&](const Key&, const std::string& holder) { append_line(holder_seen_file, holder); };
    try {
      other.begin_produce(kBlob, wait);
    } catch (const Error& e) {
      std::string message = e.what();
      return message.find(std::to_string(::getppid())) != std::string::npos &&
             message.find(kBlob.name()) != std::string::npos;
    }
    return false;
  });
  EXPECT_EQ(wait_for(impatient), 0);
  EXPECT_EQ(count_lines(holder_seen_file), 1) << "on_wait is called once";
  EXPECT_NE(capsa::test::read_file(holder_seen_file).find(std::to_string(::getpid())), std::string::npos);
}

// Threads of one process exclude each other too (OFD locks; classic POSIX locks would
// let them all in), as parallel downloads within one pull need.
TEST(Race, ThreadsOfOneProcessProduceOnce) {
  capsa::test::TempDir dir;
  Cache cache(dir / "cache");
  Production production;
  production.producers_file = dir / "producers";
  production.resumed_file = dir / "resumed";
  std::atomic<int> complete{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i)
    threads.emplace_back([&] {
      try {
        EntryUse entry = cache.wait_or_produce(kBlob, [&](ProducerLock& lock) { produce(lock, production); });
        complete += read_all(entry.fd()) == production.content;
      } catch (const std::exception& e) {
        ADD_FAILURE() << e.what();
      }
    });
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(complete, 8);
  EXPECT_EQ(count_lines(production.producers_file), 1);
}

TEST(Race, ReadersNeverSeeAPartialEntry) {
  capsa::test::TempDir dir;
  std::string root = dir / "cache";
  Cache cache(root);
  Production production;
  production.producers_file = dir / "producers";
  production.resumed_file = dir / "resumed";
  test::StartGate gate;
  std::vector<pid_t> readers;
  for (int i = 0; i < 4; ++i)
    readers.push_back(spawn([&] {
      gate.wait();
      Cache mine(root);
      // Poll until it appears; every sighting must be the complete content.
      for (;;) {
        if (auto entry = mine.use(kBlob)) return read_all(entry->fd()) == production.content;
        std::this_thread::yield();
      }
    }));
  gate.open();
  std::optional<ProducerLock> lock = cache.begin_produce(kBlob);
  ASSERT_TRUE(lock);
  produce(*lock, production);
  lock->publish();
  for (pid_t pid : readers) EXPECT_EQ(wait_for(pid), 0);
}

}  // namespace
}  // namespace capsa::cache
