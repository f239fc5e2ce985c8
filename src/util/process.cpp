#include "util/process.hpp"

#include <poll.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <string>
#include <utility>

#include "util/error.hpp"
#include "util/fd.hpp"
#include "util/log.hpp"

namespace capsa {

bool ExitStatus::exited() const { return WIFEXITED(status_); }
int ExitStatus::exit_code() const { return WEXITSTATUS(status_); }
bool ExitStatus::signaled() const { return WIFSIGNALED(status_); }
int ExitStatus::signal() const { return WTERMSIG(status_); }

int ExitStatus::code() const {
  if (exited()) return exit_code();
  if (signaled()) return 128 + signal();
  return 255;
}

namespace {

// waitpid(2), retried when a signal handler interrupts it: the one EINTR loop for
// children. -1 (errno set) on any other failure.
pid_t wait_for(pid_t pid, int* wait_status, int flags) {
  pid_t done;
  while ((done = ::waitpid(pid, wait_status, flags)) < 0 && errno == EINTR) {
  }
  return done;
}

// Whether the child `pid` has ended, without reaping it.
bool child_ended(pid_t pid) {
  siginfo_t info{};
  return ::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == pid;
}

// Waits up to `grace` for the child `pid` to end, without reaping it.
void await_end(pid_t pid, std::chrono::milliseconds grace) {
  const auto deadline = std::chrono::steady_clock::now() + grace;
  UniqueFd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
  if (!pidfd) {  // no pidfd (a kernel before 5.3): look every 5 ms
    while (!child_ended(pid) && std::chrono::steady_clock::now() < deadline) ::usleep(5000);
    return;
  }
  for (;;) {
    // Rounded up: a grace cut short by the truncated last millisecond would end early.
    auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return;
    pollfd fd{pidfd.get(), POLLIN, 0};
    int ready = ::poll(&fd, 1, static_cast<int>(left.count()));
    if (ready > 0 || (ready < 0 && errno != EINTR)) return;
  }
}

}  // namespace

Process::Process(pid_t pid, const ChildOptions& options)
    : pid_(pid), stop_signal_(options.stop_signal), stop_grace_(options.stop_grace) {}

Process::Process(Process&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)),
      in_child_(other.in_child_),
      stop_signal_(other.stop_signal_),
      stop_grace_(other.stop_grace_),
      status_(other.status_) {}

Process& Process::operator=(Process&& other) noexcept {
  if (this != &other) {
    stop();
    pid_ = std::exchange(other.pid_, -1);
    in_child_ = other.in_child_;
    stop_signal_ = other.stop_signal_;
    stop_grace_ = other.stop_grace_;
    status_ = other.status_;
  }
  return *this;
}

Process Process::fork(const ChildOptions& options) {
  std::fflush(nullptr);
  const bool check_parent = options.parent_death_signal != 0 && options.check_parent_alive;
  const pid_t parent = check_parent ? ::getpid() : 0;
  const pid_t pid = ::fork();
  if (pid < 0) throw_errno(std::string("starting ") + options.name);
  if (pid == 0) {
    if (options.parent_death_signal != 0) {
      ::prctl(PR_SET_PDEATHSIG, options.parent_death_signal);
      if (check_parent && ::getppid() != parent) ::_exit(128 + options.parent_death_signal);
    }
    Process child;
    child.in_child_ = true;
    return child;
  }
  return Process(pid, options);
}

Process Process::adopt(pid_t pid, const ChildOptions& options) {
  if (pid <= 0) throw Error(std::string("adopting ") + options.name + ": no child process");
  return Process(pid, options);
}

void Process::reaped(int wait_status) {
  status_ = ExitStatus(wait_status);
  pid_ = -1;
}

ExitStatus Process::wait() {
  if (pid_ <= 0) return status_;
  int wait_status = 0;
  if (wait_for(pid_, &wait_status, 0) < 0) throw_errno("waiting for process " + std::to_string(pid_));
  reaped(wait_status);
  return status_;
}

void Process::signal(int signal_number) const {
  if (pid_ > 0) ::kill(pid_, signal_number);
}

ExitStatus Process::stop() noexcept {
  if (pid_ <= 0) return status_;
  ::kill(pid_, stop_signal_);
  if (stop_signal_ != SIGKILL) {
    if (stop_grace_.count() > 0) await_end(pid_, stop_grace_);
    int wait_status = 0;
    if (wait_for(pid_, &wait_status, WNOHANG) == pid_) {
      reaped(wait_status);
      return status_;
    }
    ::kill(pid_, SIGKILL);
  }
  int wait_status = 0;
  if (wait_for(pid_, &wait_status, 0) < 0) wait_status = 0;  // not ours to reap (ECHILD): gone anyway
  reaped(wait_status);
  return status_;
}

ExitStatus Process::supervise(const sigset_t& signals) {
  for (;;) {
    int wait_status = 0;
    pid_t done;
    while ((done = wait_for(-1, &wait_status, WNOHANG)) > 0)
      if (done == pid_) {
        reaped(wait_status);
        return status_;
      }
    if (done < 0 && errno == ECHILD) {
      reaped(0);
      return status_;
    }
    siginfo_t info{};
    const int sig = ::sigwaitinfo(&signals, &info);
    if (sig < 0 || sig == SIGCHLD) continue;
    if (info.si_code <= 0) ::kill(pid_, sig);  // sent by a process (SI_USER, SI_QUEUE, SI_TKILL)
  }
}

void Process::exit_child(int status) {
  std::fflush(nullptr);
  ::_exit(status);
}

void Process::report_child_failure(const char* what) { log::error(what); }

void exit_like(const ExitStatus& status) {
  if (status.signaled()) {
    const int sig = status.signal();
    struct sigaction action {};
    action.sa_handler = SIG_DFL;
    ::sigaction(sig, &action, nullptr);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, sig);
    ::sigprocmask(SIG_UNBLOCK, &set, nullptr);
    ::prctl(PR_SET_DUMPABLE, 0);  // the child dumped its core already, if it did
    ::kill(::getpid(), sig);
    ::_exit(128 + sig);
  }
  ::_exit(status.exited() ? status.exit_code() : 1);
}

}  // namespace capsa
