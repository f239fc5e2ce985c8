#include "runtime/script_watchdog.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <ctime>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "util/detached_child.hpp"
#include "util/go_duration.hpp"
#include "util/log.hpp"

namespace capsa::runtime {
namespace {

std::int64_t now_ms() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

// The children of `pid` now (/proc/PID/task/PID/children), less `except`.
std::vector<pid_t> children_of(pid_t parent, const std::vector<pid_t>& except = {}) {
  std::vector<pid_t> out;
  std::ifstream in("/proc/" + std::to_string(parent) + "/task/" + std::to_string(parent) + "/children");
  for (pid_t pid = 0; in >> pid;)
    if (pid != ::getpid() && std::find(except.begin(), except.end(), pid) == except.end()) out.push_back(pid);
  return out;
}

// A process's command line, its arguments joined by blanks, as Apptainer quotes it.
std::string command_line(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/cmdline", std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  while (!text.empty() && text.back() == '\0') text.pop_back();
  for (char& c : text)
    if (c == '\0') c = ' ';
  return text;
}

// The watchdog's life: wait for the shell's byte until the deadline; answer it in time,
// or stop the shell.
// `helpers`: capsa's own children when it forked the watchdog (a FUSE server), which the
// shell inherits and which are not the scripts' to lose.
[[noreturn]] void watch(int reached, int go, pid_t shell, const EndWatch& shell_end, const std::vector<pid_t>& helpers,
                        std::chrono::nanoseconds limit) {
  const std::int64_t limit_ms = std::max<std::int64_t>(0, (limit.count() + 999999) / 1000000);
  const std::int64_t deadline = now_ms() + limit_ms;
  for (;;) {
    pollfd p{reached, POLLIN, 0};
    const std::int64_t left = std::max<std::int64_t>(0, deadline - now_ms());
    const int ready = ::poll(&p, 1, static_cast<int>(std::min<std::int64_t>(left, 1 << 30)));
    if (ready < 0 && errno == EINTR) continue;
    if (ready > 0) {
      char byte = 0;
      if (::read(reached, &byte, 1) == 1) (void)!::write(go, "go\n", 3);
      ::_exit(0);  // answered, or the shell is gone (end of file)
    }
    if (ready == 0 && now_ms() >= deadline) break;
  }
  if (shell_end.ended()) ::_exit(0);  // the shell has ended: nothing to stop
  const std::vector<pid_t> children = children_of(shell, helpers);
  const std::string command = children.empty() ? "" : command_line(children.front());
  ::kill(shell, SIGALRM);  // trapped: the shell exits 255 once its command has ended
  // SIGINT first: a shell reports a command killed by SIGKILL ("Killed") but not one
  // interrupted, and Apptainer's failure is one line (the shell traps SIGINT too, for the
  // shells that pass a child's SIGINT on to themselves). What ignores it gets SIGKILL.
  for (pid_t child : children) ::kill(child, SIGINT);
  ::usleep(100 * 1000);
  for (pid_t child : children_of(shell, helpers))
    if (std::find(children.begin(), children.end(), child) != children.end()) ::kill(child, SIGKILL);
  const std::string after = format_go_duration(limit);
  if (!command.empty())
    log::error({"command \"", command, "\" was killed after ", after, " timeout (--runscript-timeout)"});
  else
    log::error({"the environment scripts were stopped after ", after, " timeout (--runscript-timeout)"});
  ::_exit(0);  // the answer pipe closes unanswered: a shell that reaches the action exits 255
}

}  // namespace

std::optional<ScriptDeadline> start_script_watchdog(std::chrono::nanoseconds limit) {
  int reached[2], go[2];
  if (::pipe(reached) != 0) return std::nullopt;
  if (::pipe(go) != 0) {
    ::close(reached[0]);
    ::close(reached[1]);
    return std::nullopt;
  }
  auto close_all = [&] {
    for (int fd : {reached[0], reached[1], go[0], go[1]}) ::close(fd);
  };
  // The shell's ends must be one digit (`>&7`); the watchdog's are closed at the exec.
  if (reached[1] > 9 || go[0] > 9) {
    log::debug("no descriptor below 10 is free: the action script runs without a deadline");
    close_all();
    return std::nullopt;
  }
  ::fcntl(reached[0], F_SETFD, FD_CLOEXEC);
  ::fcntl(go[1], F_SETFD, FD_CLOEXEC);
  const pid_t shell = ::getpid();
  const std::vector<pid_t> helpers = children_of(shell);
  const EndWatch shell_end = EndWatch::of_this_process();
  // The watchdog is no child of the shell, two forks away: the command the shell becomes
  // would inherit it, as a zombie once it has answered, and a command that waits for every
  // child (busybox tar, an init) or counts them (the pids controller) would see it.
  const pid_t starter = ::fork();
  if (starter < 0) {
    close_all();
    return std::nullopt;
  }
  if (starter == 0) {
    if (::fork() != 0) ::_exit(0);  // the watchdog is an orphan from birth
    ::close(reached[1]);
    ::close(go[0]);
    watch(reached[0], go[1], shell, shell_end, helpers, limit);
  }
  while (::waitpid(starter, nullptr, 0) < 0 && errno == EINTR) {
  }
  ::close(reached[0]);
  ::close(go[1]);
  return ScriptDeadline{reached[1], go[0]};
}

}  // namespace capsa::runtime
