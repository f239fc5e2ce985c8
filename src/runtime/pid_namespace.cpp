#include "runtime/pid_namespace.hpp"

#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "util/error.hpp"
#include "util/fd.hpp"
#include "util/log.hpp"
#include "util/process.hpp"

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

void restore_signals() {
  for (std::size_t i = 0; i < kForwardedCount; ++i) ::sigaction(kForwarded[i], &saved_actions[i], nullptr);
  ::sigprocmask(SIG_SETMASK, &saved_mask, nullptr);
}

}  // namespace

void enter_private_pid_namespace(bool with_init) {
  if (::unshare(CLONE_NEWPID) != 0) throw_errno("creating a PID namespace (--pid)");
  Pipe report = make_pipe();
  install_supervision();
  // getppid() is 0 in PID 1: its parent is outside the namespace, nothing to check.
  Process first =
      Process::fork({.parent_death_signal = SIGKILL, .check_parent_alive = false, .name = "the PID namespace's init"});
  if (first.in_child()) {
    report.read_end.reset();
    if (::mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) != 0) {
      log::error({"mounting /proc for the PID namespace: ", std::strerror(errno)});
      ::_exit(1);
    }
    if (!with_init) {  // --no-init: the command itself is PID 1
      report.write_end.reset();
      restore_signals();
      return;
    }
    Process command;
    try {
      command = Process::fork({.name = "the command in the PID namespace"});
    } catch (const std::exception& e) {
      log::error(e.what());
      ::_exit(1);
    }
    if (command.in_child()) {
      report.write_end.reset();
      ::prctl(PR_SET_PDEATHSIG, 0);
      restore_signals();
      return;
    }
    int status = command.supervise(supervised_signals()).wait_status();
    if (::write(report.write_end.get(), &status, sizeof status) != sizeof status) ::_exit(1);
    ::_exit(0);
  }
  report.write_end.reset();
  int first_status = first.supervise(supervised_signals()).wait_status();
  // The command's status as init reported it; without init (or when init died before it
  // could report) the first process's own status is the command's.
  int status = 0;
  if (::read(report.read_end.get(), &status, sizeof status) != sizeof status) status = first_status;
  exit_like(ExitStatus(status));
}

}  // namespace capsa::runtime
