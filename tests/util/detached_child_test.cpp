// DetachedChild (util/detached_child.hpp): a server that is no child of its starter,
// reports how it ended, and goes with its starter's end through its parent-death signal
// or, started to watch for that itself, through its own watch.
#include "util/detached_child.hpp"

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <fstream>
#include <optional>
#include <string>
#include <thread>

namespace capsa {
namespace {

pid_t parent_of(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  // pid (comm) state ppid ...: comm may hold spaces, so read after its closing parenthesis
  auto close = text.rfind(')');
  if (close == std::string::npos) return -1;
  char state = 0;
  int ppid = -1;
  std::sscanf(text.c_str() + close + 1, " %c %d", &state, &ppid);
  return ppid;
}

bool alive(pid_t pid) { return ::kill(pid, 0) == 0 || errno == EPERM; }

bool ends_within(pid_t pid, std::chrono::seconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (alive(pid) && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  return !alive(pid);
}

TEST(DetachedChild, IsNoChildOfItsStarterAndReportsItsExitStatus) {
  DetachedChild child = DetachedChild::start(
      [] {
        ::usleep(200'000);
        return 3;
      },
      {.name = "a test server"});
  EXPECT_NE(parent_of(child.pid()), ::getpid());
  int status = 0;
  EXPECT_EQ(::waitpid(child.pid(), &status, WNOHANG), -1) << "waitpid must not know it";
  EXPECT_EQ(errno, ECHILD);
  std::optional<ExitStatus> ended;
  for (int i = 0; i < 250 && !ended; ++i) {
    ended = child.ended();
    if (!ended) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_TRUE(ended.has_value()) << "no report within 5 s";
  EXPECT_TRUE(ended->exited());
  EXPECT_EQ(ended->exit_code(), 3);
}

TEST(DetachedChild, EndsWithItsStarterThroughItsParentDeathSignal) {
  int pids[2];
  ASSERT_EQ(::pipe(pids), 0);
  // The starter stands for the process that becomes the container's command.
  pid_t starter = ::fork();
  ASSERT_GE(starter, 0);
  if (starter == 0) {
    ::close(pids[0]);
    DetachedChild child = DetachedChild::start(
        [] {
          for (;;) ::pause();
          return 0;
        },
        {.parent_death_signal = SIGTERM, .name = "a test server"});
    pid_t pid = child.pid();
    ssize_t written = ::write(pids[1], &pid, sizeof pid);
    ::usleep(100'000);
    ::_exit(written == sizeof pid ? 0 : 1);
  }
  ::close(pids[1]);
  pid_t server = -1;
  ASSERT_EQ(::read(pids[0], &server, sizeof server), static_cast<ssize_t>(sizeof server));
  ::close(pids[0]);
  EXPECT_TRUE(alive(server)) << "the server runs while its starter does";
  int status = 0;
  ASSERT_EQ(::waitpid(starter, &status, 0), starter);
  EXPECT_TRUE(ends_within(server, std::chrono::seconds(5))) << "the server outlived its starter";
}

// The lighter start (capsa's own FUSE server): no watcher, so the server is no child of
// the process that started it, and it is the server's own watch that tells it when that
// process (the container's command) has ended.
TEST(DetachedChild, WatchingItselfIsNoChildAndSeesItsStarterEnd) {
  int report[2], go[2];
  ASSERT_EQ(::pipe(report), 0);
  ASSERT_EQ(::pipe(go), 0);
  pid_t starter = ::fork();
  ASSERT_GE(starter, 0);
  if (starter == 0) {
    ::close(report[0]);
    ::close(go[1]);
    Process first_fork = DetachedChild::start_watching_itself(
        [&](const EndWatch& container) {
          const pid_t self = ::getpid(), parent = parent_of(self);
          if (::write(report[1], &self, sizeof self) != sizeof self) return 1;
          if (::write(report[1], &parent, sizeof parent) != sizeof parent) return 1;
          container.await();
          const char ended = 'E';
          return ::write(report[1], &ended, 1) == 1 ? 0 : 1;
        },
        "a test server");
    const bool reaped = first_fork.wait().success();  // before the exec, as a container does
    char byte = 0;
    const bool told = ::read(go[0], &byte, 1) == 0;  // the test closed its end: time to end
    ::_exit(reaped && told ? 0 : 1);
  }
  ::close(report[1]);
  ::close(go[0]);
  pid_t server = -1, its_parent = -1;
  ASSERT_EQ(::read(report[0], &server, sizeof server), static_cast<ssize_t>(sizeof server));
  ASSERT_EQ(::read(report[0], &its_parent, sizeof its_parent), static_cast<ssize_t>(sizeof its_parent));
  EXPECT_NE(its_parent, starter) << "the server is a child of the process it serves";
  pollfd ready{report[0], POLLIN, 0};
  EXPECT_EQ(::poll(&ready, 1, 50), 0) << "the server's watch ended while its starter ran";
  ::close(go[1]);
  int status = 0;
  ASSERT_EQ(::waitpid(starter, &status, 0), starter);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the first fork was not reaped";
  ASSERT_EQ(::poll(&ready, 1, 5000), 1) << "the server's watch did not see its starter end within 5 s";
  char got = 0;
  EXPECT_EQ(::read(report[0], &got, 1), 1);
  EXPECT_EQ(got, 'E');
  ::close(report[0]);
  EXPECT_TRUE(ends_within(server, std::chrono::seconds(5))) << "the server outlived its starter";
}

// A process that has ended but is not reaped yet (its parent, here this test, waits on
// something else first) has ended for the watch: with a pidfd, and through /proc on
// kernels before 5.3 (the suite's old-kernel run).
TEST(EndWatch, AnUnreapedProcessHasEnded) {
  int report[2];
  ASSERT_EQ(::pipe(report), 0);
  pid_t watched = ::fork();
  ASSERT_GE(watched, 0);
  if (watched == 0) {
    const EndWatch watch = EndWatch::of_this_process();
    if (::fork() == 0) {
      watch.await();
      char ended = watch.ended() ? 'E' : '?';
      ssize_t written = ::write(report[1], &ended, 1);
      ::_exit(written == 1 ? 0 : 1);
    }
    ::usleep(100'000);
    ::_exit(0);
  }
  ::close(report[1]);
  pollfd ready{report[0], POLLIN, 0};
  ASSERT_EQ(::poll(&ready, 1, 5000), 1) << "the watch did not see its process end within 5 s";
  char got = 0;
  EXPECT_EQ(::read(report[0], &got, 1), 1);
  EXPECT_EQ(got, 'E');
  ::close(report[0]);
  int status = 0;
  EXPECT_EQ(::waitpid(watched, &status, 0), watched);
}

}  // namespace
}  // namespace capsa
