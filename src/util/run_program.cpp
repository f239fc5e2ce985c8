#include "util/run_program.hpp"

#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>

#include "util/error.hpp"
#include "util/fd.hpp"
#include "util/log.hpp"

namespace capsa {

std::vector<char*> exec_array(const std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (const std::string& s : strings) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

Process spawn(const Command& command, const ChildOptions& options) {
  if (command.argv.empty()) throw Error("no program to run");
  // Built before the fork: the child only redirects and executes.
  std::vector<char*> argv = exec_array(command.argv);
  std::vector<char*> envp = command.env ? exec_array(*command.env) : std::vector<char*>{};
  const char* file = command.program.empty() ? argv[0] : command.program.c_str();
  ChildOptions named = options;
  named.name = file;
  Process child = Process::fork(named);
  if (child.in_child()) {
    const int redirections[3] = {command.stdin_fd, command.stdout_fd, command.stderr_fd};
    for (int target = 0; target < 3; ++target)
      if (redirections[target] >= 0 && ::dup2(redirections[target], target) < 0) ::_exit(127);
    if (command.run_as) {
      const auto [uid, gid] = *command.run_as;
      if (::setgroups(0, nullptr) != 0 || ::setresgid(gid, gid, gid) != 0 || ::setresuid(uid, uid, uid) != 0) {
        log::error({"cannot run ", file, " as uid ", std::to_string(uid), ": ", std::strerror(errno)});
        ::_exit(127);
      }
    }
    if (command.env)
      ::execvpe(file, argv.data(), envp.data());
    else
      ::execvp(file, argv.data());
    log::error({"cannot run ", file, ": ", std::strerror(errno)});
    ::_exit(127);
  }
  return child;
}

ExitStatus run_to_end(const Command& command) { return spawn(command).wait(); }

namespace {

// While it lives, a write to a pipe whose reader is gone fails with EPIPE instead of
// killing capsa: SIGPIPE is blocked in this thread, and one that a write raised is taken
// before the mask is restored. (Ignoring SIGPIPE process-wide would be inherited by the
// programs capsa runs later, containers included.)
class SigpipeBlocked {
 public:
  SigpipeBlocked() {
    sigemptyset(&sigpipe_);
    sigaddset(&sigpipe_, SIGPIPE);
    ::pthread_sigmask(SIG_BLOCK, &sigpipe_, &saved_);
    sigset_t pending;
    already_pending_ = ::sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE) == 1;
  }
  ~SigpipeBlocked() {
    if (raised_ && !already_pending_) {
      const timespec now{};
      while (::sigtimedwait(&sigpipe_, nullptr, &now) < 0 && errno == EINTR) {
      }
    }
    ::pthread_sigmask(SIG_SETMASK, &saved_, nullptr);
  }
  SigpipeBlocked(const SigpipeBlocked&) = delete;
  SigpipeBlocked& operator=(const SigpipeBlocked&) = delete;
  void note_epipe() { raised_ = true; }

 private:
  sigset_t sigpipe_;
  sigset_t saved_;
  bool already_pending_ = false;
  bool raised_ = false;
};

std::string duration_text(std::chrono::milliseconds duration) {
  if (duration.count() % 1000 == 0) return std::to_string(duration.count() / 1000) + " s";
  return std::to_string(duration.count()) + " ms";
}

// Feeds `in` and drains `out` and `err` with poll until both outputs are closed.
void exchange(UniqueFd in, UniqueFd out, UniqueFd err, const std::string& input, const CaptureLimits& limits,
              const std::string& program, Captured& result) {
  SigpipeBlocked sigpipe;
  if (input.empty()) in.reset();
  if (in) ::fcntl(in.get(), F_SETFL, O_NONBLOCK);
  std::size_t written = 0;
  const auto deadline = std::chrono::steady_clock::now() + limits.timeout;
  while (out || err) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) throw Error(program + " did not finish within " + duration_text(limits.timeout));
    // poll ignores the entries of closed ends (fd -1).
    pollfd fds[3] = {{out.get(), POLLIN, 0}, {err.get(), POLLIN, 0}, {in.get(), POLLOUT, 0}};
    if (::poll(fds, 3, static_cast<int>(std::min<long long>(left.count(), INT_MAX))) < 0) {
      if (errno == EINTR) continue;
      throw_errno("waiting for " + program);
    }
    UniqueFd* sources[2] = {&out, &err};
    std::string* sinks[2] = {&result.out, &result.err};
    for (int i = 0; i < 2; ++i) {
      if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      char buffer[4096];
      const ssize_t got = ::read(sources[i]->get(), buffer, sizeof buffer);
      if (got > 0 && sinks[i]->size() < limits.max_output)
        sinks[i]->append(buffer, std::min(static_cast<std::size_t>(got), limits.max_output - sinks[i]->size()));
      if (got == 0 || (got < 0 && errno != EINTR && errno != EAGAIN)) sources[i]->reset();
    }
    if (in && (fds[2].revents & (POLLOUT | POLLERR | POLLHUP))) {
      const ssize_t put = ::write(in.get(), input.data() + written, input.size() - written);
      if (put > 0) written += static_cast<std::size_t>(put);
      if (put < 0 && errno == EPIPE) sigpipe.note_epipe();
      if ((put < 0 && errno != EAGAIN && errno != EINTR) || written == input.size()) in.reset();
    }
  }
}

}  // namespace

Captured run_captured(const Command& command, const std::string& input, const CaptureLimits& limits) {
  if (command.argv.empty()) throw Error("no program to run");
  Pipe in = make_pipe();
  Pipe out = make_pipe();
  Pipe err = make_pipe();
  Command piped = command;
  piped.stdin_fd = in.read_end.get();
  piped.stdout_fd = out.write_end.get();
  piped.stderr_fd = err.write_end.get();
  Process child = spawn(piped);
  in.read_end.reset();
  out.write_end.reset();
  err.write_end.reset();
  Captured result;
  exchange(std::move(in.write_end), std::move(out.read_end), std::move(err.read_end), input, limits,
           command.program.empty() ? command.argv[0] : command.program, result);
  result.status = child.wait();
  return result;
}

}  // namespace capsa
