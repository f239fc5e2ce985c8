#include "runtime/instance_init.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iterator>
#include <string>

#include "runtime/instance_state.hpp"
#include "util/error.hpp"
#include "util/fd.hpp"
#include "util/log.hpp"
#include "util/process.hpp"

namespace capsa::runtime {
namespace {

// What `instance stop --signal` may send (and a job's end sends): the init passes each on
// to the whole namespace and then ends with the last process.
constexpr int kStopSignals[] = {SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2, SIGALRM};
constexpr std::size_t kStopSignalCount = std::size(kStopSignals);
// How long the processes of an instance whose job ended get between SIGTERM and SIGKILL.
constexpr int kJobEndGraceMs = 5000;

struct sigaction saved_actions[kStopSignalCount];
sigset_t saved_mask;

// A PID 1 receives only the signals it has a handler for; they stay blocked and are
// taken with sigwaitinfo or a signalfd, so the handler never runs.
void ignore_in_handler(int) {}

sigset_t instance_signals() {
  sigset_t set;
  sigemptyset(&set);
  for (int sig : kStopSignals) sigaddset(&set, sig);
  sigaddset(&set, SIGCHLD);
  return set;
}

void take_signals() {
  struct sigaction action {};
  action.sa_handler = ignore_in_handler;
  for (std::size_t i = 0; i < kStopSignalCount; ++i) ::sigaction(kStopSignals[i], &action, &saved_actions[i]);
  sigset_t set = instance_signals();
  ::sigprocmask(SIG_BLOCK, &set, &saved_mask);
}

void restore_signals() {
  for (std::size_t i = 0; i < kStopSignalCount; ++i) ::sigaction(kStopSignals[i], &saved_actions[i], nullptr);
  ::sigprocmask(SIG_SETMASK, &saved_mask, nullptr);
}

void write_line(int fd, const std::string& line) {
  const std::string text = line + "\n";
  if (fd >= 0) (void)!::write(fd, text.data(), text.size());  // one write: a pipe keeps it whole
}

// PID 1: reaps, passes stop signals on, and ends once stopping and nothing is left.
[[noreturn]] void run_init() {
  const sigset_t signals = instance_signals();
  bool stopping = false;
  for (;;) {
    siginfo_t info{};
    const int sig = ::sigwaitinfo(&signals, &info);
    if (sig < 0) continue;
    if (sig != SIGCHLD) {
      stopping = true;
      ::kill(-1, sig);  // every process of the namespace but this one
    }
    for (;;) {
      const pid_t reaped = ::waitpid(-1, nullptr, WNOHANG);
      if (reaped > 0) continue;
      if (reaped < 0 && errno == EINTR) continue;
      if (reaped < 0 && errno == ECHILD && stopping) ::_exit(0);
      break;
    }
  }
}

// The record NAME.json in `dir_fd` is removed if it still names `pid`.
void remove_record(int dir_fd, const std::string& name, pid_t pid) {
  if (dir_fd < 0) return;
  const std::string file = name + ".json";
  UniqueFd fd(::openat(dir_fd, file.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!fd) return;
  try {
    if (record_from_json(read_to_end(fd.get(), file), file).pid != pid) return;
  } catch (const Error&) {
    return;
  }
  ::unlinkat(dir_fd, file.c_str(), 0);
}

bool wait_readable(int fd, int timeout_ms) {
  pollfd p{fd, POLLIN, 0};
  int n = 0;
  while ((n = ::poll(&p, 1, timeout_ms)) < 0 && errno == EINTR) {
  }
  return n > 0;
}

// The monitor, once the instance is ready: passes signals to the init, ends the instance
// when its job step ends, and goes when the init has gone.
[[noreturn]] void run_monitor(Process& init, InstanceSupervision& s) {
  UniqueFd init_fd(static_cast<int>(::syscall(SYS_pidfd_open, init.pid(), 0)));
  if (!init_fd) {
    init.signal(SIGKILL);
    throw_errno("watching the instance's init");
  }
  const sigset_t forwarded = [] {
    sigset_t set;
    sigemptyset(&set);
    for (int sig : kStopSignals) sigaddset(&set, sig);
    return set;
  }();
  UniqueFd signals(::signalfd(-1, &forwarded, SFD_CLOEXEC));
  int job_fd = s.job_fd;
  for (;;) {
    pollfd fds[3] = {{init_fd.get(), POLLIN, 0}, {signals.get(), POLLIN, 0}, {job_fd, POLLIN, 0}};
    const int n = ::poll(fds, job_fd >= 0 ? 3 : 2, -1);
    if (n < 0) continue;
    if (fds[0].revents != 0) break;
    if (fds[1].revents != 0) {
      signalfd_siginfo info{};
      if (::read(signals.get(), &info, sizeof info) == sizeof info) init.signal(static_cast<int>(info.ssi_signo));
    }
    if (job_fd >= 0 && fds[2].revents != 0) {
      log::info({"the Slurm job step (or --sharens parent) of instance ", s.name, " has ended: stopping it"});
      init.signal(SIGTERM);
      if (!wait_readable(init_fd.get(), kJobEndGraceMs)) init.signal(SIGKILL);
      job_fd = -1;
    }
  }
  const pid_t pid = init.pid();
  init.wait();
  remove_record(s.record_dir_fd, s.name, pid);
  ::_exit(0);
}

}  // namespace

void report_instance_failure(const InstanceSupervision& s, const std::string& message) {
  std::string line = message;
  for (char& c : line)
    if (c == '\n') c = ' ';
  write_line(s.status_fd, "error " + line);
}

void enter_instance_pid_namespace(InstanceSupervision& s) {
  if (::unshare(CLONE_NEWPID) != 0) throw_errno("creating the instance's PID namespace");
  ::signal(SIGPIPE, SIG_IGN);  // a starting capsa that went away is seen as EPIPE
  Pipe ready = make_pipe();
  take_signals();
  // getppid() is 0 in PID 1: its parent is outside the namespace, nothing to check.
  Process init =
      Process::fork({.parent_death_signal = SIGKILL, .check_parent_alive = false, .name = "the instance's init"});
  if (init.in_child()) {
    ready.read_end.reset();
    for (int fd : {s.status_fd, s.job_fd, s.record_dir_fd})
      if (fd >= 0) ::close(fd);
    s.status_fd = s.job_fd = s.record_dir_fd = -1;
    ::signal(SIGPIPE, SIG_DFL);
    if (::mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) != 0) {
      log::error({"mounting /proc for the instance's PID namespace: ", std::strerror(errno)});
      ::_exit(1);
    }
    Process command;
    try {
      command = Process::fork({.name = "the instance's start script"});
    } catch (const std::exception& e) {
      log::error(e.what());
      ::_exit(1);
    }
    if (command.in_child()) {
      ready.write_end.reset();
      ::prctl(PR_SET_PDEATHSIG, 0);
      restore_signals();
      return;  // to launch(), which executes the start script
    }
    command.release();  // reaped by run_init with every other child
    write_line(ready.write_end.get(), "ready");
    ready.write_end.reset();
    run_init();
  }
  ready.write_end.reset();
  char byte = 0;
  if (::read(ready.read_end.get(), &byte, 1) != 1) {
    init.wait();
    throw Error("the instance's init ended before it was ready (see the instance's log)");
  }
  // From here on the monitor never returns into launch(): errors end the instance.
  try {
    const std::string line = "ready " + std::to_string(init.pid()) + "\n";
    if (::write(s.status_fd, line.data(), line.size()) != static_cast<ssize_t>(line.size())) {
      init.signal(SIGKILL);  // nobody waits for it: an instance without a record must not live on
      init.wait();
      ::_exit(1);
    }
    ::close(s.status_fd);
    s.status_fd = -1;
    run_monitor(init, s);
  } catch (const std::exception& e) {
    log::error(e.what());
    ::_exit(1);
  }
}

}  // namespace capsa::runtime
