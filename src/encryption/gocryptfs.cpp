#include "encryption/gocryptfs.hpp"

#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <functional>
#include <thread>

#include "util/error.hpp"
#include "util/find_executable.hpp"
#include "util/open_files.hpp"
#include "util/run_program.hpp"

namespace capsa::encryption {
namespace {

constexpr auto kMountTimeout = std::chrono::seconds(20);
constexpr auto kInitTimeout = std::chrono::seconds(60);

bool write_text(const char* path, const std::string& text) {
  UniqueFd fd(::open(path, O_WRONLY | O_CLOEXEC));
  return fd && ::write(fd.get(), text.data(), text.size()) == static_cast<ssize_t>(text.size());
}

std::string read_to_end_at(int fd) {
  std::string text;
  char buf[4096];
  for (off_t at = 0;;) {
    ssize_t n = ::pread(fd, buf, sizeof buf, at);
    if (n <= 0) break;
    text.append(buf, static_cast<std::size_t>(n));
    at += n;
  }
  return text;
}

// gocryptfs' messages, for an error line: the last one that says something, the
// secret-free ones only (gocryptfs never prints the password; it may print the master
// key on -init, whose output is never shown).
std::string last_line(int log_fd) {
  const std::string text = read_to_end_at(log_fd);
  std::string last;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(start, end - start);
    // gocryptfs colours its errors on a terminal only; strip what may remain.
    if (!line.empty() && line.find("Reading Password") == std::string::npos &&
        line.find("Decrypting master key") == std::string::npos)
      last = line;
    start = end + 1;
  }
  return last.empty() ? std::string("no message") : last;
}

// A pipe that holds `secret` and a newline, its write end closed: gocryptfs reads it
// from its standard input. The secret fits in the pipe's buffer (64 KiB).
UniqueFd secret_pipe(const std::string& secret, int times) {
  Pipe pipe = make_pipe();
  for (int i = 0; i < times; ++i) {
    std::string line = secret + "\n";
    write_all(pipe.write_end.get(), {reinterpret_cast<const std::uint8_t*>(line.data()), line.size()});
    std::fill(line.begin(), line.end(), '\0');
  }
  pipe.write_end.reset();
  return std::move(pipe.read_end);
}

Process start(const std::vector<std::string>& argv, int stdin_fd, int log_fd) {
  Command command;
  command.argv = argv;
  command.program = gocryptfs_program();
  // Nothing of the caller's environment (a passphrase variable) reaches it.
  command.env = std::vector<std::string>{"PATH=/usr/sbin:/usr/bin:/sbin:/bin"};
  command.stdin_fd = stdin_fd;
  command.stdout_fd = log_fd;
  command.stderr_fd = log_fd;
  return spawn(command, {.parent_death_signal = SIGTERM,
                         .stop_signal = SIGTERM,
                         .stop_grace = std::chrono::milliseconds(2000),
                         .name = "gocryptfs"});
}

// Whether `dir` is a mount point in this mount namespace, from /proc/self/mountinfo: a
// stat(2) of it would go to the FUSE server once it is mounted, and block for as long as
// a stalled server does not answer.
bool mounted_at(const std::string& dir) {
  std::string escaped;  // as mountinfo writes a path: space, tab, newline, backslash in octal
  for (char c : dir) {
    if (c == ' ' || c == '\t' || c == '\n' || c == '\\') {
      static constexpr char kOctal[] = "01234567";
      const auto u = static_cast<unsigned char>(c);
      escaped += {'\\', kOctal[(u >> 6) & 7], kOctal[(u >> 3) & 7], kOctal[u & 7]};
    } else {
      escaped.push_back(c);
    }
  }
  UniqueFd info(::open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC));
  if (!info) return false;
  const std::string text = read_to_end_at(info.get());
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    // ID PARENT MAJOR:MINOR ROOT MOUNT-POINT ...: the fifth field.
    std::size_t field = start;
    for (int i = 0; i < 4 && field < end; ++i) field = text.find(' ', field) + 1;
    const std::size_t field_end = std::min(text.find(' ', field), end);
    if (field > start && text.compare(field, field_end - field, escaped) == 0) return true;
    start = end + 1;
  }
  return false;
}

// Waits up to `limit` for `process` to end; nullopt (the process still owned) when it has not.
std::optional<ExitStatus> wait_for(Process& process, std::chrono::seconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  for (auto pause = std::chrono::microseconds(500);; pause = std::min(pause * 2, std::chrono::microseconds(20000))) {
    int status = 0;
    if (::waitpid(process.pid(), &status, WNOHANG) == process.pid()) {
      process.release();
      return ExitStatus(status);
    }
    if (std::chrono::steady_clock::now() > deadline) return std::nullopt;
    std::this_thread::sleep_for(pause);
  }
}

UniqueFd new_log() {
  UniqueFd log(::memfd_create("gocryptfs-log", MFD_CLOEXEC));
  if (!log) throw_errno("creating gocryptfs' log");
  return log;
}

}  // namespace

std::string gocryptfs_program() {
  std::string found = find_system_program("gocryptfs");
  if (found.empty())
    throw Error("gocryptfs was not found (encrypted SIF images need it: install the gocryptfs package)");
  return found;
}

bool enter_private_mount_namespace() {
  const uid_t uid = ::geteuid();
  const gid_t gid = ::getegid();
  if (uid == 0) {
    if (::unshare(CLONE_NEWNS) != 0) return false;
  } else {
    if (::unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0) return false;
    // The caller is root of the namespace: gocryptfs, run from here, keeps the right to
    // mount in it (FUSE needs both ids mapped).
    if (!write_text("/proc/self/setgroups", "deny") ||
        !write_text("/proc/self/uid_map", "0 " + std::to_string(uid) + " 1\n") ||
        !write_text("/proc/self/gid_map", "0 " + std::to_string(gid) + " 1\n"))
      return false;
  }
  return ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) == 0;
}

Process mount_gocryptfs(const std::string& cipher_dir, const std::string& plain_dir, const std::string& secret,
                        bool read_only, const std::string& image) {
  // As mountinfo shows it (symbolic links resolved), taken before anything is mounted there.
  char resolved[PATH_MAX];
  if (::realpath(plain_dir.c_str(), resolved) == nullptr) throw_errno(plain_dir);
  const std::string mount_point = resolved;
  UniqueFd log = new_log();
  UniqueFd input = secret_pipe(secret, 1);
  std::vector<std::string> argv = {"gocryptfs", "-fg", "-q"};
  if (read_only) argv.emplace_back("-ro");
  argv.insert(argv.end(), {"--", cipher_dir, plain_dir});
  Process server = start(argv, input.get(), log.get());
  input.reset();
  const auto deadline = std::chrono::steady_clock::now() + kMountTimeout;
  for (auto pause = std::chrono::microseconds(500);; pause = std::min(pause * 2, std::chrono::microseconds(20000))) {
    // Mounted, and done with its own poll hack: go-fuse opens a file in the new mount
    // (.go-fuse-epoll-hack) and closes it a moment later. A gocryptfs stopped while that
    // file is open never ends (its exit flushes the file to the server it no longer
    // runs: the descriptor is numbered below /dev/fuse's), and an unmount meanwhile is
    // refused as busy.
    if (mounted_at(mount_point) && !has_files_open_under(server.pid(), mount_point)) return server;
    int status = 0;
    if (::waitpid(server.pid(), &status, WNOHANG) == server.pid()) {
      server.release();
      if (WIFEXITED(status) && WEXITSTATUS(status) == kWrongSecretStatus)
        throw Error("the passphrase or key does not decrypt " + image + " (wrong passphrase or key)");
      throw Error("gocryptfs could not decrypt " + image + ": " + last_line(log.get()) +
                  " (the encrypted partition may be damaged)");
    }
    if (std::chrono::steady_clock::now() > deadline)
      throw Error("gocryptfs did not mount " + image + " within 20 s: " + last_line(log.get()));
    std::this_thread::sleep_for(pause);
  }
}

void encrypt_into_directory(const std::string& plain_file, const std::string& cipher_dir, const std::string& name,
                            const std::string& secret) {
  {
    // As Apptainer makes it: file names in clear (there are two), no per-directory IV.
    UniqueFd log = new_log();
    UniqueFd input = secret_pipe(secret, 2);
    Process init = start({"gocryptfs", "-q", "-init", "-deterministic-names", "-plaintextnames", "--", cipher_dir},
                         input.get(), log.get());
    input.reset();
    // Bounded, as every wait on gocryptfs here: a stalled gocryptfs fails the build in one
    // line (and is stopped) instead of hanging it.
    std::optional<ExitStatus> status = wait_for(init, kInitTimeout);
    if (!status) throw Error("gocryptfs -init did not finish within 60 s: " + last_line(log.get()));
    if (!status->success()) throw Error("gocryptfs -init failed: " + last_line(log.get()));
  }
  const std::string plain_dir = cipher_dir + ".plain";
  if (::mkdir(plain_dir.c_str(), 0700) != 0) throw_errno(plain_dir);
  UniqueFd source = open_file(plain_file, O_RDONLY | O_CLOEXEC);
  const std::uint64_t size = file_size(source.get());
  // The copy runs in a helper in a mount namespace of its own: the plain view is never
  // mounted where anyone else could read it. Its error comes back as one line.
  run_in_private_namespace("encrypting the image", [&] {
    Process server = mount_gocryptfs(cipher_dir, plain_dir, secret, false, plain_file);
    {
      UniqueFd out = open_file(plain_dir + "/" + name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
      copy_range_to(source.get(), 0, size, out.get());
      if (::fsync(out.get()) != 0) throw_errno("writing the encrypted image");
    }
    if (::umount2(plain_dir.c_str(), 0) != 0) throw_errno("unmounting gocryptfs");
    std::optional<ExitStatus> ended = wait_for(server, kMountTimeout);
    if (!ended) throw Error("gocryptfs did not end within 20 s of its unmount");
    if (!ended->success()) throw Error("gocryptfs failed while unmounting the encrypted image");
  });
  ::rmdir(plain_dir.c_str());
}

void run_in_private_namespace(const std::string& what, const std::function<void()>& body) {
  UniqueFd message(::memfd_create("capsa-helper-error", MFD_CLOEXEC));
  if (!message) throw_errno("creating the helper's error channel");
  const int message_fd = message.get();
  Process helper = Process::start(
      [&]() -> int {
        try {
          if (!enter_private_mount_namespace()) throw_errno("making a private mount namespace for gocryptfs");
          body();
          return 0;
        } catch (const std::exception& e) {
          const std::string text = e.what();
          [[maybe_unused]] ssize_t n = ::write(message_fd, text.data(), text.size());
        }
        return 1;
      },
      {.parent_death_signal = SIGKILL, .name = "the encryption helper"});
  ExitStatus status = helper.wait();
  if (status.success()) return;
  std::string text = read_to_end_at(message_fd);
  throw Error(text.empty() ? what + " failed (exit status " + std::to_string(status.code()) + ")" : text);
}

}  // namespace capsa::encryption
