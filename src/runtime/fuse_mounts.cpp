#include "runtime/fuse_mounts.hpp"

#include <fcntl.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <sstream>
#include <thread>

#include "util/error.hpp"
#include "util/run_program.hpp"

namespace capsa::runtime {
namespace {

constexpr auto kServeTimeout = std::chrono::seconds(10);

// What the program wrote to its stderr, on one line, for an error message.
std::string log_tail(int fd) {
  std::string text;
  char buf[4096];
  ssize_t n;
  off_t at = 0;
  while ((n = ::pread(fd, buf, sizeof buf, at)) > 0) {
    text.append(buf, static_cast<std::size_t>(n));
    at += n;
  }
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  for (char& c : text)
    if (c == '\n') c = ' ';
  return text.size() > 400 ? text.substr(text.size() - 400) : text;
}

// The program's argv: its words, then /dev/fd/N where the mount point was.
std::vector<std::string> program_argv(const FuseMountSpec& spec, int fuse_fd) {
  std::vector<std::string> argv = spec.command;
  argv.push_back("/dev/fd/" + std::to_string(fuse_fd));
  return argv;
}

// In the server process: its descriptors, then the program. Nothing of the caller's
// environment but PATH reaches it (a registry password stays with capsa).
int exec_program(const std::vector<std::string>& argv, int fuse_fd, int log_fd) {
  int null_fd = ::open("/dev/null", O_RDWR);
  ::dup2(null_fd, STDIN_FILENO);
  ::dup2(null_fd, STDOUT_FILENO);
  ::dup2(log_fd, STDERR_FILENO);
  ::fcntl(fuse_fd, F_SETFD, 0);
  const char* path = std::getenv("PATH");
  std::string path_entry = std::string("PATH=") + (path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin");
  char* environment[] = {path_entry.data(), nullptr};
  std::vector<char*> args = exec_array(argv);
  ::execvpe(args[0], args.data(), environment);
  std::string message = argv[0] + ": " + std::strerror(errno) + "\n";
  if (::write(STDERR_FILENO, message.data(), message.size()) < 0) return 127;
  return 127;
}

}  // namespace

std::vector<FuseMountSpec> parse_fusemounts(const std::vector<std::string>& values) {
  std::vector<FuseMountSpec> out;
  for (const std::string& value : values) {
    const std::string what = "--fusemount \"" + value + "\"";
    const auto colon = value.find(':');
    const std::string kind = colon == std::string::npos ? "" : value.substr(0, colon);
    FuseMountSpec spec;
    if (kind == "host" || kind == "container") {
      spec.on_host = kind == "host";
    } else if (kind == "host-daemon" || kind == "container-daemon") {
      throw Error(std::string(what).append(": ").append(kind).append(
          ": is not supported (capsa serves a FUSE mount for the container's life; use host: or container:, "
          "and an instance for a long-lived one)"));
    } else {
      throw Error(what + ": expected host:PROGRAM [ARGS...] MOUNTPOINT or container:PROGRAM [ARGS...] MOUNTPOINT");
    }
    std::istringstream words(value.substr(colon + 1));
    for (std::string word; words >> word;) spec.command.push_back(word);
    if (spec.command.size() < 2) throw Error(what + ": give the FUSE program and then the mount point");
    spec.mount_point = spec.command.back();
    spec.command.pop_back();
    if (spec.mount_point.empty() || spec.mount_point[0] != '/' || spec.mount_point == "/")
      throw Error(what + ": the mount point must be an absolute path inside the container (not /)");
    out.push_back(std::move(spec));
  }
  return out;
}

FuseMounts FuseMounts::prepare(const std::vector<FuseMountSpec>& specs) {
  FuseMounts mounts;
  for (const FuseMountSpec& spec : specs) {
    Mount m;
    m.spec = spec;
    m.fuse = UniqueFd(::open("/dev/fuse", O_RDWR | O_CLOEXEC));
    if (!m.fuse) throw_errno("--fusemount: opening /dev/fuse");
    m.log = UniqueFd(::memfd_create("fusemount-log", MFD_CLOEXEC));
    if (!m.log) throw_errno("--fusemount: a log for " + spec.command[0]);
    if (spec.on_host) {
      int go[2], ready[2];
      if (::pipe2(go, O_CLOEXEC) != 0) throw_errno("--fusemount");
      UniqueFd wait_end(go[0]);
      m.go = UniqueFd(go[1]);
      if (::pipe2(ready, O_CLOEXEC) != 0) throw_errno("--fusemount");
      UniqueFd ready_read(ready[0]), ready_write(ready[1]);
      const std::vector<std::string> argv = program_argv(spec, m.fuse.get());
      const int fuse_fd = m.fuse.get(), log_fd = m.log.get(), wait_fd = wait_end.get(), go_fd = m.go.get(),
                ready_fd = ready_write.get();
      m.server = DetachedChild::start(
          [&] {
            ::setsid();
            ::close(go_fd);
            // A copy of the host's view: the container's pivot_root does not move this
            // process's root, and its end does not touch the container's mounts.
            if (::unshare(CLONE_NEWNS) != 0) return 126;
            char byte = 1;
            if (::write(ready_fd, &byte, 1) != 1) return 126;
            ::close(ready_fd);
            ssize_t n;
            while ((n = ::read(wait_fd, &byte, 1)) < 0 && errno == EINTR) {
            }
            if (n != 1) return 0;  // capsa ended before the mount: nothing to serve
            return exec_program(argv, fuse_fd, log_fd);
          },
          {.parent_death_signal = SIGTERM, .name = spec.command[0].c_str()});
      // Not before it has its own mount namespace: the container's pivot_root would move it.
      ready_write.reset();
      char byte = 0;
      ssize_t n;
      while ((n = ::read(ready_read.get(), &byte, 1)) < 0 && errno == EINTR) {
      }
      if (n != 1)
        throw Error("--fusemount: " + spec.command[0] + " could not be started in a mount namespace of its own");
    }
    mounts.mounts_.push_back(std::move(m));
  }
  return mounts;
}

void FuseMounts::mount_all() {
  for (Mount& m : mounts_) {
    const std::string& point = m.spec.mount_point;
    const std::string what = "--fusemount " + m.spec.command[0] + " at " + point;
    struct stat st {};
    if (::stat(point.c_str(), &st) != 0) {
      throw Error(what + ": the mount point does not exist in the container (" + std::strerror(errno) +
                  "): make it in the image, or bind a directory there");
    }
    if (!S_ISDIR(st.st_mode)) {
      throw Error(what + ": not a directory in the container");
    }
    const std::string options = "fd=" + std::to_string(m.fuse.get()) +
                                ",rootmode=40000,user_id=" + std::to_string(::getuid()) +
                                ",group_id=" + std::to_string(::getgid());
    const std::string source = m.spec.command[0];
    if (::mount(source.c_str(), point.c_str(), "fuse", MS_NOSUID | MS_NODEV, options.c_str()) != 0)
      throw_errno(what + ": mounting /dev/fuse");
    if (m.spec.on_host) {
      const char byte = 1;
      if (::write(m.go.get(), &byte, 1) != 1) throw_errno(what + ": starting the program");
      m.go.reset();
    } else {
      const std::vector<std::string> argv = program_argv(m.spec, m.fuse.get());
      const int fuse_fd = m.fuse.get(), log_fd = m.log.get();
      m.server = DetachedChild::start(
          [&] {
            ::setsid();
            // A copy of the container's view without the mount it serves: when the
            // container's namespace goes, so does the last mount, the kernel ends the
            // connection, and the program exits (it would keep the namespace alive else).
            if (::unshare(CLONE_NEWNS) != 0 || ::umount2(point.c_str(), MNT_DETACH) != 0) return 126;
            return exec_program(argv, fuse_fd, log_fd);
          },
          {.parent_death_signal = SIGTERM, .name = m.spec.command[0].c_str()});
    }
    m.fuse.reset();  // the program holds the connection now
  }
  // Each answers once it has read the kernel's INIT: a stat waits for that; a server that
  // ends first aborts the connection (ENOTCONN), and its message is the error.
  for (Mount& m : mounts_) {
    const std::string what = "--fusemount " + m.spec.command[0] + " at " + m.spec.mount_point;
    const auto deadline = std::chrono::steady_clock::now() + kServeTimeout;
    for (;;) {
      struct stat st {};
      if (::stat(m.spec.mount_point.c_str(), &st) == 0) break;
      if (auto status = m.server->ended())
        throw Error(what + ": the program ended (exit status " + std::to_string(status->code()) +
                    "): " + log_tail(m.log.get()));
      if (std::chrono::steady_clock::now() > deadline)
        throw Error(what + ": the program did not serve within 10 s: " + log_tail(m.log.get()));
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    m.log.reset();
  }
}

}  // namespace capsa::runtime
