#include "spank/run_as_user.hpp"

#include <fcntl.h>
#include <grp.h>
#include <linux/close_range.h>
#include <pwd.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>

namespace capsa::spank {
namespace {

std::vector<char*> pointers(std::vector<std::string>& strings) {
  std::vector<char*> array;
  array.reserve(strings.size() + 1);
  for (auto& s : strings) array.push_back(s.data());
  array.push_back(nullptr);
  return array;
}

// The user's supplementary groups, looked up before fork (getgrouplist allocates, which a
// child of the multi-threaded slurmstepd must not do).
std::vector<gid_t> groups_of(uid_t uid, gid_t gid) {
  const passwd* user = ::getpwuid(uid);
  if (user == nullptr) return {gid};
  int count = 64;
  std::vector<gid_t> groups(static_cast<size_t>(count));
  if (::getgrouplist(user->pw_name, gid, groups.data(), &count) < 0) {
    groups.resize(static_cast<size_t>(count));
    if (::getgrouplist(user->pw_name, gid, groups.data(), &count) < 0) return {gid};
  }
  groups.resize(static_cast<size_t>(count));
  return groups;
}

// In the child, between fork and exec: async-signal-safe calls only.
[[noreturn]] void become_user_and_exec(const UserCommand& command, const std::vector<gid_t>& groups, char** argv,
                                       char** envp, int output_fd) {
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sig == SIGKILL || sig == SIGSTOP) continue;
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    sigaction(sig, &dfl, nullptr);
  }
  const int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (null_fd < 0 || ::dup2(null_fd, 0) < 0 || ::dup2(output_fd, 1) < 0 || ::dup2(output_fd, 2) < 0) ::_exit(126);
  ::syscall(SYS_close_range, 3U, ~0U, 0U);
  // Root (slurmd, slurmstepd) may set the user's groups; slurm_spank_user_init runs with
  // the user's groups and effective ids already, and may only make them real.
  if (::geteuid() == 0 && command.uid != 0 && ::setgroups(groups.size(), groups.data()) != 0) ::_exit(126);
  if (::setresgid(command.gid, command.gid, command.gid) != 0) ::_exit(126);
  if (::setresuid(command.uid, command.uid, command.uid) != 0) ::_exit(126);
  if (::getuid() != command.uid || ::geteuid() != command.uid) ::_exit(126);
  ::execve(argv[0], argv, envp);
  static const char message[] = "capsa: error: the SPANK plugin cannot run capsa (see `capsa=` in plugstack.conf)\n";
  [[maybe_unused]] auto written = ::write(2, message, sizeof message - 1);
  ::_exit(127);
}

}  // namespace

UserCommandResult run_as_user(const UserCommand& command) {
  UserCommandResult result;
  std::vector<std::string> argv_strings = command.argv, env_strings = command.env;
  auto argv = pointers(argv_strings), envp = pointers(env_strings);
  const auto groups = groups_of(command.uid, command.gid);
  // A file, not a pipe: `instance start` leaves a monitor behind, and the output is
  // complete when the command has exited, whoever else still holds the descriptor.
  const int output_fd = ::memfd_create("capsa-spank-output", MFD_CLOEXEC);
  if (output_fd < 0) {
    result.output = "capsa: error: the SPANK plugin cannot make a file for capsa's output";
    return result;
  }
  const pid_t child = ::fork();
  if (child == 0) become_user_and_exec(command, groups, argv.data(), envp.data(), output_fd);
  if (child < 0) {
    ::close(output_fd);
    result.output = "capsa: error: the SPANK plugin cannot fork";
    return result;
  }
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  // Only the tail comes into slurmstepd: what the plugin uses is capsa's last line, and
  // the user's command decides how much it prints (an image's messages, a long error).
  struct stat st {};
  off_t start = 0;
  if (::fstat(output_fd, &st) == 0 && st.st_size > static_cast<off_t>(kOutputLimit)) {
    start = st.st_size - static_cast<off_t>(kOutputLimit);
    result.output = "[capsa's output cut: its first " + std::to_string(start) + " bytes are not shown]\n";
  }
  char buffer[4096];
  for (off_t offset = start; offset - start < static_cast<off_t>(kOutputLimit);) {
    const auto wanted = std::min(sizeof buffer, static_cast<size_t>(kOutputLimit - (offset - start)));
    const ssize_t n = ::pread(output_fd, buffer, wanted, offset);
    if (n <= 0) break;
    result.output.append(buffer, static_cast<size_t>(n));
    offset += n;
  }
  ::close(output_fd);
  return result;
}

std::string last_line(const std::string& output, const std::string& fallback) {
  auto end = output.find_last_not_of("\n\r ");
  if (end == std::string::npos) return fallback;
  const auto start = output.rfind('\n', end);
  return output.substr(start == std::string::npos ? 0 : start + 1,
                       end + 1 - (start == std::string::npos ? 0 : start + 1));
}

void set_variable(std::vector<std::string>& env, const std::string& name, const std::string& value) {
  const std::string prefix = name + "=";
  for (auto& entry : env) {
    if (entry.starts_with(prefix)) {
      entry = prefix + value;
      return;
    }
  }
  env.push_back(prefix + value);
}

}  // namespace capsa::spank
