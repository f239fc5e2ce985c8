#include "util/detached_child.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <string>

#include "util/error.hpp"

namespace capsa {
namespace {

UniqueFd pidfd_of(pid_t pid) { return UniqueFd(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0))); }

bool write_all(int fd, const void* data, std::size_t size) {
  const auto* bytes = static_cast<const char*>(data);
  while (size > 0) {
    ssize_t n = ::write(fd, bytes, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    bytes += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

// The watcher's loop: returns when the container or `server` has ended; reports the
// server's wait status on `reports` when it was the server.
void watch(const EndWatch& container, pid_t server, int reports) {
  UniqueFd server_fd = pidfd_of(server);
  for (;;) {
    int wait_status = 0;
    pid_t done = ::waitpid(server, &wait_status, WNOHANG);
    if (done == server) {
      if (reports >= 0) write_all(reports, &wait_status, sizeof wait_status);
      return;
    }
    if (container.poll_fd() >= 0 && server_fd) {
      pollfd ends[2] = {{container.poll_fd(), POLLIN, 0}, {server_fd.get(), POLLIN, 0}};
      if (::poll(ends, 2, -1) > 0 && (ends[0].revents & POLLIN) != 0) return;
    } else {  // no pidfd (a kernel before 5.3)
      if (container.ended()) return;
      ::usleep(100'000);
    }
  }
}

}  // namespace

namespace {

// Forks the starter, which forks the watcher and ends at once: the watcher is an orphan
// from birth. The watcher forks the server and watches. `reports`: where the watcher
// writes the server's pid and, when the server ends, its wait status (-1: nowhere);
// `caller_end`: the other end of that pipe, closed in the watcher (-1: none).
Process fork_starter(const std::function<int()>& body, const ChildOptions& options, int reports, int caller_end) {
  const EndWatch container = EndWatch::of_this_process();
  return Process::start(
      [&] {
        Process::start(
            [&] {
              if (caller_end >= 0) ::close(caller_end);
              // The terminal's and the job's signals are the container's to act on.
              for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGTSTP, SIGTTIN, SIGTTOU, SIGUSR1, SIGUSR2})
                ::signal(sig, SIG_IGN);
              Process server = Process::start(
                  [&] {
                    if (reports >= 0) ::close(reports);
                    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGTSTP, SIGTTIN, SIGTTOU, SIGUSR1, SIGUSR2})
                      ::signal(sig, SIG_DFL);
                    return body();
                  },
                  options);
              const pid_t pid = server.pid();
              if (reports >= 0 && !write_all(reports, &pid, sizeof pid)) return 1;
              // No pipe of the caller's stays open through this process.
              int null_fd = ::open("/dev/null", O_RDWR);
              if (null_fd >= 0) {
                ::dup2(null_fd, STDIN_FILENO);
                ::dup2(null_fd, STDOUT_FILENO);
                ::dup2(null_fd, STDERR_FILENO);
              }
              watch(container, pid, reports);
              server.release();  // the server ends on its parent-death signal, or has ended
              return 0;
            },
            {.name = "the watcher of a detached process"})
            .release();
        return 0;
      },
      {.name = "a detached process"});
}

}  // namespace

DetachedChild DetachedChild::start(const std::function<int()>& body, const ChildOptions& options) {
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) throw_errno("starting " + std::string(options.name));
  UniqueFd reading(pipe_fds[0]), writing(pipe_fds[1]);
  Process starter = fork_starter(body, options, writing.get(), reading.get());
  writing.reset();
  starter.wait();
  pid_t pid = -1;
  ssize_t n;
  while ((n = ::read(reading.get(), &pid, sizeof pid)) < 0 && errno == EINTR) {
  }
  if (n != sizeof pid) throw Error(std::string("could not start ") + options.name);
  return {pid, std::move(reading)};
}

Process DetachedChild::start_unreported(const std::function<int()>& body, const ChildOptions& options) {
  return fork_starter(body, options, -1, -1);
}

Process DetachedChild::start_watching_itself(const std::function<int(const EndWatch&)>& body, const char* name) {
  const EndWatch container = EndWatch::of_this_process();
  return Process::start(
      [&] {
        Process::start([&] { return body(container); }, {.name = name}).release();
        return 0;
      },
      {.name = "a detached process"});
}

EndWatch EndWatch::of_this_process() { return of(::getpid()); }

EndWatch EndWatch::of(pid_t pid) {
  EndWatch watch;
  watch.pidfd_ = pidfd_of(pid);
  if (!watch.pidfd_)
    watch.proc_dir_ = UniqueFd(::open(("/proc/" + std::to_string(pid)).c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  return watch;
}

bool EndWatch::ended() const {
  if (pidfd_) {
    pollfd ready{pidfd_.get(), POLLIN, 0};
    return ::poll(&ready, 1, 0) > 0;
  }
  // /proc/PID/stat: "PID (COMM) STATE ..."; gone once reaped, state Z or X until then.
  UniqueFd stat(::openat(proc_dir_.get(), "stat", O_RDONLY | O_CLOEXEC));
  if (!stat) return true;
  char text[512];
  ssize_t n = ::read(stat.get(), text, sizeof text - 1);
  if (n <= 0) return true;
  text[n] = '\0';
  const char* close = std::strrchr(text, ')');
  return close == nullptr || close[1] == '\0' || close[2] == 'Z' || close[2] == 'X';
}

void EndWatch::await() const {
  if (pidfd_) {
    pollfd ended{pidfd_.get(), POLLIN, 0};
    while (::poll(&ended, 1, -1) < 0 && errno == EINTR) {
    }
    return;
  }
  while (!ended()) ::usleep(100'000);
}

std::optional<ExitStatus> DetachedChild::ended() {
  if (!reports_) return std::nullopt;
  pollfd ready{reports_.get(), POLLIN, 0};
  if (::poll(&ready, 1, 0) <= 0) return std::nullopt;
  int wait_status = 0;
  ssize_t n;
  while ((n = ::read(reports_.get(), &wait_status, sizeof wait_status)) < 0 && errno == EINTR) {
  }
  reports_.reset();
  // The watcher went without a word (killed): the server, its child, went with it.
  if (n != sizeof wait_status) return ExitStatus(SIGKILL);
  return ExitStatus(wait_status);
}

}  // namespace capsa
