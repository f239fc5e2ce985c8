#include "util/log.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <latch>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace capsa::log {
namespace {

// Points fd 2 at a temporary file for its lifetime; text() is what was written there.
class StderrCapture {
 public:
  StderrCapture() : file_(std::tmpfile()), saved_(::dup(STDERR_FILENO)) {
    if (file_ == nullptr || saved_ < 0 || ::dup2(::fileno(file_), STDERR_FILENO) < 0) std::abort();
  }
  ~StderrCapture() {
    ::dup2(saved_, STDERR_FILENO);
    ::close(saved_);
    std::fclose(file_);
  }
  std::string text() const {
    std::string out;
    char buf[4096];
    for (off_t at = 0;;) {
      ssize_t n = ::pread(::fileno(file_), buf, sizeof buf, at);
      if (n <= 0) return out;
      out.append(buf, static_cast<std::size_t>(n));
      at += n;
    }
  }

 private:
  std::FILE* file_;
  int saved_;
};

// The channel is process-wide: every test starts from and leaves the defaults.
class Log : public ::testing::Test {
 protected:
  void SetUp() override { reset(); }
  void TearDown() override { reset(); }
  static void reset() {
    set_sink({});
    set_level(Level::info);
  }
};

TEST_F(Log, ByDefaultAMessageIsOneLineOnStderrWithApptainersPrefix) {
  StderrCapture err;
  warning("skipping mount of /x: no such file or directory");
  info("no test script in this container");
  error("cannot run /x: Permission denied");
  EXPECT_EQ(err.text(),
            "WARNING: skipping mount of /x: no such file or directory\n"
            "INFO:    no test script in this container\n"
            "capsa: error: cannot run /x: Permission denied\n");
}

TEST_F(Log, TheLevelHidesWhatIsMoreDetailedButNeverErrors) {
  StderrCapture err;
  verbose("v0");
  debug("d0");
  set_level(Level::warning);  // -q
  info("i1");
  warning("w1");
  set_level(Level::error);  // -s
  warning("w2");
  error("e2");
  set_level(Level::debug);  // -d
  debug("d3");
  EXPECT_EQ(err.text(), "WARNING: w1\ncapsa: error: e2\nDEBUG:   d3\n");
  EXPECT_TRUE(enabled(Level::debug));
  set_level(Level::warning);
  EXPECT_FALSE(enabled(Level::info));
  EXPECT_TRUE(enabled(Level::error));
}

TEST_F(Log, PartsAreJoined) {
  StderrCapture err;
  warning({"a", "", "bc", ": ", std::string("d")});
  std::vector<std::string> many(20, "x");  // more parts than one writev takes at once
  write(Level::warning, {many[0], many[1], many[2], many[3], many[4], many[5], many[6], many[7], many[8], many[9],
                         many[10], many[11], many[12], many[13], many[14], many[15], many[16], many[17]});
  EXPECT_EQ(err.text(), "WARNING: abc: d\nWARNING: " + std::string(18, 'x') + "\n");
}

TEST_F(Log, ErrnoIsKeptWhenStderrCannotBeWritten) {
  StderrCapture err;
  int read_only = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(read_only, 0);
  ASSERT_GE(::dup2(read_only, STDERR_FILENO), 0);  // writes fail with EBADF
  ::close(read_only);
  errno = ENOENT;
  warning("lost");
  EXPECT_EQ(errno, ENOENT) << "callers report errno after a warning";
}

TEST_F(Log, ABlockThatEndsInANewlineGetsNoSecondOne) {
  StderrCapture err;
  set_level(Level::debug);
  debug("mount plan\n  bind /a -> /b\n");
  EXPECT_EQ(err.text(), "DEBUG:   mount plan\n  bind /a -> /b\n");
}

TEST_F(Log, ASinkGetsTheLevelAndTheBareMessageUntilItIsRemoved) {
  StderrCapture err;
  std::vector<std::pair<Level, std::string>> got;
  set_sink([&](Level level, std::string_view message) { got.emplace_back(level, message); });
  warning("w");
  error({"e", "1"});
  debug("hidden");
  set_sink({});
  warning("back on stderr");
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0], std::make_pair(Level::warning, std::string("w")));
  EXPECT_EQ(got[1], std::make_pair(Level::error, std::string("e1")));
  EXPECT_EQ(err.text(), "WARNING: back on stderr\n");
}

TEST_F(Log, AScopedSinkPutsBackTheOneItReplaced) {
  std::string got;
  set_sink([&](Level, std::string_view message) { got += "outer:" + std::string(message) + "\n"; });
  {
    Sink outer = current_sink();
    ScopedSink inner([&, outer](Level level, std::string_view message) {
      got += "inner:";
      outer(level, message);  // as a display does: around the sink it replaced
    });
    warning("1");
  }
  warning("2");
  EXPECT_EQ(got, "inner:outer:1\nouter:2\n");
}

TEST_F(Log, ASinkThatThrowsLosesNoMessage) {
  StderrCapture err;
  set_sink([](Level, std::string_view) { throw std::runtime_error("full"); });
  warning("still shown");
  EXPECT_EQ(err.text(), "WARNING: still shown\n");
}

TEST_F(Log, LinesFromManyThreadsDoNotMix) {
  StderrCapture err;
  constexpr int kThreads = 8, kLines = 300;
  std::vector<std::jthread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([t] {
      const std::string body(100 + t, static_cast<char>('a' + t));
      for (int i = 0; i < kLines; ++i) warning({"thread ", std::to_string(t), " ", body});
    });
  threads.clear();  // joins
  std::map<std::string, int> lines;
  std::string text = err.text();
  for (std::size_t at = 0, end; (end = text.find('\n', at)) != std::string::npos; at = end + 1)
    ++lines[text.substr(at, end - at)];
  ASSERT_EQ(lines.size(), static_cast<std::size_t>(kThreads)) << "every line is one thread's, whole";
  for (int t = 0; t < kThreads; ++t)
    EXPECT_EQ(lines["WARNING: thread " + std::to_string(t) + " " + std::string(100 + t, static_cast<char>('a' + t))],
              kLines);
}

// A forked child of a threaded process must not need the parent's sink: here another
// thread holds the lock the sink takes, at the fork and for good in the child.
TEST_F(Log, AForkedChildWritesToStderrItselfThoughTheSinkIsLocked) {
  StderrCapture err;
  std::mutex lock;
  std::string got;
  set_sink([&](Level, std::string_view message) {
    std::lock_guard hold(lock);
    got += message;
  });
  std::latch taken(1);
  std::jthread holder([&] {
    std::lock_guard hold(lock);
    taken.count_down();
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  });
  taken.wait();
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    error({"cannot run ", "/x", ": ", "No such file or directory"});
    ::_exit(0);
  }
  int status = -1;
  for (int i = 0; i < 100 && ::waitpid(pid, &status, WNOHANG) == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  if (status == -1) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
    FAIL() << "the child hung on the parent's sink";
  }
  holder.join();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_EQ(err.text(), "capsa: error: cannot run /x: No such file or directory\n");
  warning("parent");
  EXPECT_EQ(got, "parent") << "the parent keeps its sink";
}

TEST(LogPrefix, MatchesApptainer) {
  EXPECT_EQ(prefix(Level::warning), "WARNING: ");
  EXPECT_EQ(prefix(Level::info), "INFO:    ");
  EXPECT_EQ(prefix(Level::verbose), "VERBOSE: ");
  EXPECT_EQ(prefix(Level::debug), "DEBUG:   ");
}

}  // namespace
}  // namespace capsa::log
