#include "runtime/instance_init.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <string>
#include <vector>

#include "runtime/instance_state.hpp"
#include "util/detached_child.hpp"
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
// A kept image's is no PID 1 and has nothing to pass a signal to: it ends at the first.
[[noreturn]] void run_init(bool kept) {
  const sigset_t signals = instance_signals();
  bool stopping = false;
  for (;;) {
    siginfo_t info{};
    const int sig = ::sigwaitinfo(&signals, &info);
    if (sig < 0) continue;
    if (sig != SIGCHLD && kept) ::_exit(0);
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

// A kept image's containers, as its monitor sees them: the processes in its mount
// namespace other than its own (the monitor's session: the init, the FUSE server and its
// watcher). They are found by a scan of /proc only when the monitor has to know (none of
// those it watches is left, or the linger is over), and watched through pidfds in
// between, so that a kept image costs no CPU while it is in use and nothing at all on
// the path of a container's start. A container that has joined may have children that
// outlive it: they are found by the next scan and keep the mounts as long as they run.
class KeptUsers {
 public:
  explicit KeptUsers(const InstanceSupervision& s) : lock_fd_(s.kept_lock_fd), linger_(s.linger_ms) {
    own_namespace_ = namespace_of("self");
    own_session_ = ::getsid(0);
  }

  bool active() const { return lock_fd_ >= 0; }
  const std::vector<EndWatch>& users() const { return users_; }

  // Drops the processes that have ended; when none is left, looks for others (the
  // children they left, containers that joined meanwhile), and starts the linger when
  // there are none.
  void update() {
    std::erase_if(users_, [](const EndWatch& user) { return user.ended(); });
    if (!users_.empty()) return;
    scan();
    if (users_.empty() && !idle_) {
      idle_ = true;
      idle_since_ = std::chrono::steady_clock::now();
    }
  }

  // How long poll may wait: until the linger ends (none left), or -1; 100 ms where a
  // kernel without pidfds leaves /proc to be polled; 5 ms while a container holds the lock.
  int poll_timeout() const {
    int timeout = -1;
    if (users_.empty()) {
      const auto left = idle_since_ + std::chrono::milliseconds(linger_) - std::chrono::steady_clock::now();
      timeout = static_cast<int>(
          std::max<long long>(0, std::chrono::duration_cast<std::chrono::milliseconds>(left).count() + 1));
      if (lock_busy_) timeout = 5;
    }
    for (const EndWatch& user : users_)
      if (user.poll_fd() < 0) timeout = timeout < 0 ? 100 : std::min(timeout, 100);
    return timeout;
  }

  // True once the linger has passed with nothing in the namespace; from then on the lock
  // is held, so no container can join: a late one finds no record and starts anew.
  bool end_if_lingered() {
    lock_busy_ = false;
    if (!users_.empty() || std::chrono::steady_clock::now() < idle_since_ + std::chrono::milliseconds(linger_))
      return false;
    if (::flock(lock_fd_, LOCK_EX | LOCK_NB) != 0) {
      lock_busy_ = true;  // a container between finding the record and entering the namespace
      return false;
    }
    scan();
    if (users_.empty()) return true;  // the lock goes with this process
    ::flock(lock_fd_, LOCK_UN);
    idle_ = false;
    return false;
  }

 private:
  static std::string namespace_of(const std::string& pid) {
    char target[64];
    const ssize_t n = ::readlink(("/proc/" + pid + "/ns/mnt").c_str(), target, sizeof target);
    return n > 0 ? std::string(target, static_cast<std::size_t>(n)) : std::string();
  }

  // /proc/PID/stat field 6.
  static pid_t session_of(const std::string& pid) {
    UniqueFd stat(::open(("/proc/" + pid + "/stat").c_str(), O_RDONLY | O_CLOEXEC));
    char text[512];
    const ssize_t n = stat ? ::read(stat.get(), text, sizeof text - 1) : -1;
    if (n <= 0) return -1;
    text[n] = '\0';
    const char* fields = std::strrchr(text, ')');
    int ppid = 0, group = 0, session = -1;
    char state = 0;
    if (fields == nullptr || std::sscanf(fields + 1, " %c %d %d %d", &state, &ppid, &group, &session) != 4) return -1;
    return session;
  }

  void scan() {
    users_.clear();
    DIR* proc = ::opendir("/proc");
    if (proc == nullptr) return;
    while (dirent* entry = ::readdir(proc)) {
      const std::string pid = entry->d_name;
      if (pid.empty() || pid.find_first_not_of("0123456789") != std::string::npos) continue;
      // Another user's process cannot be read (and is no container of this one's).
      if (namespace_of(pid) != own_namespace_ || session_of(pid) == own_session_) continue;
      users_.push_back(EndWatch::of(static_cast<pid_t>(std::stol(pid))));
      idle_ = false;
    }
    ::closedir(proc);
  }

  int lock_fd_;
  int linger_;
  std::string own_namespace_;
  pid_t own_session_ = -1;
  bool idle_ = false;
  bool lock_busy_ = false;
  std::vector<EndWatch> users_;
  std::chrono::steady_clock::time_point idle_since_ = std::chrono::steady_clock::now();
};

// The monitor, once the instance is ready: passes signals to the init, ends the instance
// when its job step ends (or, for a kept image, when it has lingered unused), and goes
// when the init has gone.
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
  KeptUsers kept(s);
  // A container's exit wakes the monitor; woken at normal priority it would preempt the
  // work of the node, on a busy one for a whole time slice. Nothing it does is urgent
  // (the FUSE server, forked before, keeps its own priority).
  if (kept.active()) {
    sched_param idle{};
    ::sched_setscheduler(0, SCHED_IDLE, &idle);
  }
  for (;;) {
    std::vector<pollfd> fds = {{init_fd.get(), POLLIN, 0}, {signals.get(), POLLIN, 0}, {job_fd, POLLIN, 0}};
    if (kept.active()) {
      for (const EndWatch& user : kept.users())
        if (user.poll_fd() >= 0) fds.push_back({user.poll_fd(), POLLIN, 0});
    }
    const int n = ::poll(fds.data(), fds.size(), kept.active() ? kept.poll_timeout() : -1);
    if (n < 0) continue;
    if (fds[0].revents != 0) break;
    if (fds[1].revents != 0) {
      signalfd_siginfo info{};
      if (::read(signals.get(), &info, sizeof info) == sizeof info) init.signal(static_cast<int>(info.ssi_signo));
    }
    if (job_fd >= 0 && fds[2].revents != 0) {
      log::info({"the ", s.job_kind, " of instance ", s.name, " has ended: stopping it"});
      init.signal(SIGTERM);
      if (!wait_readable(init_fd.get(), kJobEndGraceMs)) init.signal(SIGKILL);
      job_fd = -1;
    }
    if (!kept.active()) continue;
    kept.update();
    if (kept.end_if_lingered()) init.signal(SIGTERM);  // it holds nothing but the mounts: it ends at once
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
  // A kept image's containers run in the host's PID namespace, as every other
  // container's command does: its "init" is a plain process that only keeps the instance.
  if (!s.kept() && ::unshare(CLONE_NEWPID) != 0) throw_errno("creating the instance's PID namespace");
  ::signal(SIGPIPE, SIG_IGN);  // a starting capsa that went away is seen as EPIPE
  Pipe ready = make_pipe();
  take_signals();
  // getppid() is 0 in PID 1: its parent is outside the namespace, nothing to check.
  Process init =
      Process::fork({.parent_death_signal = SIGKILL, .check_parent_alive = false, .name = "the instance's init"});
  if (init.in_child()) {
    ready.read_end.reset();
    for (int fd : {s.status_fd, s.job_fd, s.record_dir_fd, s.kept_lock_fd})
      if (fd >= 0) ::close(fd);
    s.status_fd = s.job_fd = s.record_dir_fd = -1;
    const bool kept = s.kept();
    s.kept_lock_fd = -1;
    ::signal(SIGPIPE, SIG_DFL);
    if (!kept && ::mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) != 0) {
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
      if (kept) ::_exit(0);  // a kept image only holds its mounts
      ready.write_end.reset();
      ::prctl(PR_SET_PDEATHSIG, 0);
      restore_signals();
      return;  // to launch(), which executes the start script
    }
    command.release();  // reaped by run_init with every other child
    write_line(ready.write_end.get(), "ready");
    ready.write_end.reset();
    run_init(kept);
  }
  ready.write_end.reset();
  char byte = 0;
  if (::read(ready.read_end.get(), &byte, 1) != 1) {
    init.wait();
    throw Error("the instance's init ended before it was ready (see the instance's log)");
  }
  // From here on the monitor never returns into launch(): errors end the instance.
  try {
    const std::string line = "ready " + std::to_string(init.pid()) + " " + std::to_string(::getpid()) + "\n";
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
