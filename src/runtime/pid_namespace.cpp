#include "runtime/pid_namespace.hpp"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "util/error.hpp"
#include "util/fd.hpp"
#include "util/log.hpp"

namespace capsa::runtime {
namespace {

constexpr int kForwarded[] = {SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2, SIGALRM, SIGCONT, SIGWINCH};

// A handler (not SIG_DFL) is what lets a PID 1 receive signals at all; the signals stay
// blocked and are taken with sigwaitinfo, so the handler never runs.
void ignore_in_handler(int) {}

sigset_t supervised_signals() {
  sigset_t set;
  sigemptyset(&set);
  for (int sig : kForwarded) sigaddset(&set, sig);
  sigaddset(&set, SIGCHLD);
  return set;
}

constexpr std::size_t kForwardedCount = sizeof kForwarded / sizeof kForwarded[0];
struct sigaction saved_actions[kForwardedCount];  // what the command inherits again (SIG_IGN from nohup, say)
sigset_t saved_mask;

void install_supervision() {
  sigset_t set = supervised_signals();
  struct sigaction action {};
  action.sa_handler = ignore_in_handler;
  for (std::size_t i = 0; i < kForwardedCount; ++i) ::sigaction(kForwarded[i], &action, &saved_actions[i]);
  ::sigprocmask(SIG_BLOCK, &set, &saved_mask);
}

// Waits for `child`, forwarding signals to it and reaping any other child; returns its
// wait status.
int supervise(pid_t child) {
  sigset_t set = supervised_signals();
  for (;;) {
    int status = 0;
    pid_t done;
    while ((done = ::waitpid(-1, &status, WNOHANG)) > 0)
      if (done == child) return status;
    if (done < 0 && errno == ECHILD) return 0;
    siginfo_t info{};
    int sig = ::sigwaitinfo(&set, &info);
    if (sig < 0 || sig == SIGCHLD) continue;
    if (info.si_code <= 0) ::kill(child, sig);  // sent by a process (SI_USER, SI_QUEUE, SI_TKILL)
  }
}

void restore_signals() {
  for (std::size_t i = 0; i < kForwardedCount; ++i) ::sigaction(kForwarded[i], &saved_actions[i], nullptr);
  ::sigprocmask(SIG_SETMASK, &saved_mask, nullptr);
}

// Ends this process the way `status` says the command ended.
[[noreturn]] void end_like(int status) {
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    struct sigaction action {};
    action.sa_handler = SIG_DFL;
    ::sigaction(sig, &action, nullptr);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, sig);
    ::sigprocmask(SIG_UNBLOCK, &set, nullptr);
    ::prctl(PR_SET_DUMPABLE, 0);  // the command dumped its core already, if it did
    ::kill(::getpid(), sig);
    ::_exit(128 + sig);
  }
  ::_exit(WIFEXITED(status) ? WEXITSTATUS(status) : 1);
}

}  // namespace

void enter_private_pid_and_ipc_namespaces() {
  if (::unshare(CLONE_NEWPID | CLONE_NEWIPC) != 0) throw_errno("creating PID and IPC namespaces (--containall)");
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw_errno("pipe");
  UniqueFd read_end(fds[0]), write_end(fds[1]);
  install_supervision();
  pid_t init = ::fork();
  if (init < 0) throw_errno("starting the PID namespace's init");
  if (init == 0) {
    read_end.reset();
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // (getppid() is 0 here: the parent is outside the namespace)
    // The mount of /proc and the fork happen here; the command's process returns.
    if (::mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) != 0) {
      log::error({"mounting /proc for the PID namespace: ", std::strerror(errno)});
      ::_exit(1);
    }
    pid_t command = ::fork();
    if (command < 0) {
      log::error({"starting the command in the PID namespace: ", std::strerror(errno)});
      ::_exit(1);
    }
    if (command == 0) {
      write_end.reset();
      ::prctl(PR_SET_PDEATHSIG, 0);
      restore_signals();
      return;
    }
    int status = supervise(command);
    if (::write(write_end.get(), &status, sizeof status) != sizeof status) ::_exit(1);
    ::_exit(0);
  }
  write_end.reset();
  int init_status = supervise(init);
  int status = 0;
  if (::read(read_end.get(), &status, sizeof status) != sizeof status) status = init_status;
  end_like(status);
}

}  // namespace capsa::runtime
