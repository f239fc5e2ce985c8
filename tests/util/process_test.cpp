#include "util/process.hpp"

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <stdexcept>
#include <string>

#include "util/error.hpp"
#include "util/fd.hpp"

namespace capsa {
namespace {

// A child that waits for signals until it is ended.
int wait_forever() {
  for (;;) ::pause();
}

// The pid was reaped (not a zombie waiting for us) and nothing runs under it.
void expect_gone(pid_t pid) {
  int status = 0;
  errno = 0;
  EXPECT_EQ(::waitpid(pid, &status, WNOHANG), -1);
  EXPECT_EQ(errno, ECHILD) << "process " << pid << " was not reaped";
  errno = 0;
  EXPECT_EQ(::kill(pid, 0), -1);
  EXPECT_EQ(errno, ESRCH) << "process " << pid << " still exists";
}

char read_one(int fd) {
  char c = 0;
  while (::read(fd, &c, 1) < 0 && errno == EINTR) {
  }
  return c;
}

void write_one(int fd, char c) {
  while (::write(fd, &c, 1) < 0 && errno == EINTR) {
  }
}

TEST(Process, AChildRunsAFunctionAndEndsWithWhatItReturns) {
  Process child = Process::start([] { return 7; });
  ASSERT_TRUE(child);
  EXPECT_GT(child.pid(), 0);
  EXPECT_FALSE(child.in_child());
  ExitStatus status = child.wait();
  EXPECT_TRUE(status.exited());
  EXPECT_EQ(status.exit_code(), 7);
  EXPECT_EQ(status.code(), 7);
  EXPECT_FALSE(child);
  EXPECT_EQ(child.wait().code(), 7) << "waiting again gives the same status";
}

TEST(Process, AnExceptionInTheChildIsPrintedAndExitsOne) {
  Pipe err = make_pipe();
  Process child = Process::start([&]() -> int {
    ::dup2(err.write_end.get(), STDERR_FILENO);
    throw Error("no luck");
  });
  err.write_end.reset();
  EXPECT_EQ(read_to_end(err.read_end.get(), "stderr"), "capsa: error: no luck\n");
  EXPECT_EQ(child.wait().code(), 1);
}

TEST(Process, ASignalledChildReportsOneHundredTwentyEightPlusTheSignal) {
  Process child = Process::start([] {
    ::signal(SIGTERM, SIG_DFL);
    ::kill(::getpid(), SIGTERM);
    return 0;
  });
  ExitStatus status = child.wait();
  EXPECT_TRUE(status.signaled());
  EXPECT_FALSE(status.exited());
  EXPECT_FALSE(status.success());
  EXPECT_EQ(status.signal(), SIGTERM);
  EXPECT_EQ(status.code(), 128 + SIGTERM);
}

TEST(Process, ForkReturnsTwiceAndOnlyTheParentOwnsTheChild) {
  Process child = Process::fork();
  if (child.in_child()) ::_exit(child ? 100 : 9);  // the child's Process owns nothing
  EXPECT_FALSE(child.in_child());
  EXPECT_EQ(child.wait().code(), 9);
}

TEST(Process, IsKilledAndReapedWhenItGoesOutOfScope) {
  pid_t pid = -1;
  {
    Process child = Process::start(wait_forever);
    pid = child.pid();
    ASSERT_EQ(::kill(pid, 0), 0);
  }
  expect_gone(pid);
}

TEST(Process, IsKilledAndReapedWhenAnExceptionUnwinds) {
  pid_t pid = -1;
  try {
    Process child = Process::start(wait_forever);
    pid = child.pid();
    throw std::runtime_error("failure after the start");
  } catch (const std::runtime_error&) {
  }
  ASSERT_GT(pid, 0);
  expect_gone(pid);
}

TEST(Process, MovingHandsOverTheOneOwner) {
  Process first = Process::start(wait_forever);
  const pid_t pid = first.pid();
  Process second = std::move(first);
  EXPECT_FALSE(first);  // NOLINT(bugprone-use-after-move): the moved-from state is what is checked
  EXPECT_EQ(second.pid(), pid);
  first = Process();  // a moved-from Process signals nothing
  EXPECT_EQ(::kill(pid, 0), 0);
  Process third = Process::start(wait_forever);
  const pid_t replaced = third.pid();
  third = std::move(second);  // the child third owned is stopped
  expect_gone(replaced);
  EXPECT_EQ(third.pid(), pid);
  third.signal(SIGKILL);
  EXPECT_EQ(third.wait().signal(), SIGKILL);
}

volatile sig_atomic_t alarms = 0;
void count_alarm(int) { alarms = alarms + 1; }

TEST(Process, WaitingGoesOnWhenASignalInterruptsIt) {
  struct sigaction action {
  }, saved{};
  action.sa_handler = count_alarm;  // no SA_RESTART: waitpid fails with EINTR
  ASSERT_EQ(::sigaction(SIGALRM, &action, &saved), 0);
  alarms = 0;
  Process child = Process::start([] {
    ::usleep(300000);
    return 5;
  });
  itimerval soon{};
  soon.it_value.tv_usec = 50000;
  ASSERT_EQ(::setitimer(ITIMER_REAL, &soon, nullptr), 0);
  ExitStatus status = child.wait();
  ::sigaction(SIGALRM, &saved, nullptr);
  EXPECT_EQ(alarms, 1) << "the signal arrived while waiting";
  EXPECT_EQ(status.code(), 5);
}

TEST(Process, AStopSignalFirstLetsTheChildCleanUp) {
  Pipe ready = make_pipe();
  Pipe cleaned = make_pipe();
  Process child = Process::start(
      [&] {
        static int cleaned_fd = cleaned.write_end.get();
        ::signal(SIGTERM, [](int) {
          write_one(cleaned_fd, 'c');
          ::_exit(0);
        });
        write_one(ready.write_end.get(), 'r');
        return wait_forever();
      },
      {.stop_signal = SIGTERM, .stop_grace = std::chrono::seconds(10)});
  cleaned.write_end.reset();
  ASSERT_EQ(read_one(ready.read_end.get()), 'r');
  ExitStatus status = child.stop();
  EXPECT_TRUE(status.exited()) << "ended by SIGTERM's handler, not killed";
  EXPECT_EQ(read_one(cleaned.read_end.get()), 'c');
}

TEST(Process, AChildThatIgnoresTheStopSignalIsKilledAfterTheGrace) {
  Pipe ready = make_pipe();
  Process child = Process::start(
      [&] {
        ::signal(SIGTERM, SIG_IGN);
        write_one(ready.write_end.get(), 'r');
        return wait_forever();
      },
      {.stop_signal = SIGTERM, .stop_grace = std::chrono::milliseconds(200)});
  ASSERT_EQ(read_one(ready.read_end.get()), 'r');
  const auto start = std::chrono::steady_clock::now();
  const pid_t pid = child.pid();
  ExitStatus status = child.stop();
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(200));
  EXPECT_EQ(status.signal(), SIGKILL);
  expect_gone(pid);
}

// The grandchild holds a pipe open: end of file on it means it died with its parent.
TEST(Process, TheParentDeathSignalEndsAChildWhoseParentDied) {
  Pipe alive = make_pipe();
  Process parent = Process::start([&] {
    Process grandchild = Process::start(wait_forever, {.parent_death_signal = SIGKILL});
    grandchild.release();  // left to the parent-death signal
    return 0;
  });
  alive.write_end.reset();
  EXPECT_EQ(parent.wait().code(), 0);
  pollfd fd{alive.read_end.get(), POLLIN, 0};
  ASSERT_EQ(::poll(&fd, 1, 10000), 1) << "the grandchild outlived its parent";
  EXPECT_EQ(read_one(alive.read_end.get()), 0);
}

TEST(Process, ReleasingGivesTheChildUp) {
  Process child = Process::start(wait_forever);
  const pid_t pid = child.pid();
  child.release();
  EXPECT_FALSE(child);
  child.stop();
  EXPECT_EQ(::kill(pid, 0), 0) << "a released child is not stopped";
  ::kill(pid, SIGKILL);
  int status = 0;
  EXPECT_EQ(::waitpid(pid, &status, 0), pid);
}

TEST(Process, AdoptsAChildStartedOtherwise) {
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) wait_forever();
  { Process adopted = Process::adopt(pid); }
  expect_gone(pid);
  EXPECT_THROW(Process::adopt(-1), Error);
}

TEST(Process, SupervisingForwardsSignalsAProcessSentAndReapsOtherChildren) {
  sigset_t signals, saved;
  sigemptyset(&signals);
  sigaddset(&signals, SIGUSR1);
  sigaddset(&signals, SIGCHLD);
  ASSERT_EQ(::sigprocmask(SIG_BLOCK, &signals, &saved), 0);
  Process other = Process::start([] { return 0; });
  const pid_t other_pid = other.pid();
  other.release();
  siginfo_t ended{};
  ASSERT_EQ(::waitid(P_PID, other_pid, &ended, WEXITED | WNOWAIT), 0);  // a zombie now, not reaped
  Pipe ready = make_pipe();
  Process child = Process::start([&] {
    sigset_t usr1;
    sigemptyset(&usr1);
    sigaddset(&usr1, SIGUSR1);
    write_one(ready.write_end.get(), 'r');
    const timespec patience{10, 0};
    return ::sigtimedwait(&usr1, nullptr, &patience) == SIGUSR1 ? 42 : 1;  // blocked since the fork
  });
  ASSERT_EQ(read_one(ready.read_end.get()), 'r');
  ::kill(::getpid(), SIGUSR1);  // to the supervisor, as `kill` to capsa
  ExitStatus status = child.supervise(signals);
  ::sigprocmask(SIG_SETMASK, &saved, nullptr);
  EXPECT_EQ(status.code(), 42) << "the signal was passed on";
  EXPECT_FALSE(child);
  expect_gone(other_pid);  // reaped along the way, as an init reaps orphans
}

TEST(Process, ExitLikeEndsThisProcessAsTheChildEnded) {
  Process signalled = Process::start([]() -> int { exit_like(ExitStatus(SIGTERM)); });
  EXPECT_EQ(signalled.wait().signal(), SIGTERM);
  Process exited = Process::start([]() -> int { exit_like(ExitStatus(3 << 8)); });
  EXPECT_EQ(exited.wait().code(), 3);
}

}  // namespace
}  // namespace capsa
