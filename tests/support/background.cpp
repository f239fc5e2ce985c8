#include "support/background.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <thread>

#include "support/temp_dir.hpp"

namespace capsa::test {

Background::Background(const std::vector<std::string>& argv, const std::string& err_file, bool own_group,
                       const std::string& out_file)
    : own_group_(own_group), err_file_(err_file), out_file_(out_file) {
  std::fflush(nullptr);
  pid_ = ::fork();
  if (pid_ == 0) {
    if (own_group) ::setpgid(0, 0);
    int null_fd = ::open("/dev/null", O_RDWR);
    if (null_fd >= 0) {
      ::dup2(null_fd, 0);
      ::dup2(null_fd, 1);
    }
    if (!out_file.empty()) {
      int out = ::open(out_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (out >= 0) ::dup2(out, 1);
    }
    int err = ::open(err_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (err >= 0) ::dup2(err, 2);
    // Only 0-2 go on: what the program holds beyond them, it opened itself (the load
    // tests look for descriptors capsa leaks into containers).
    ::close_range(3, ~0U, 0);
    std::vector<char*> args;
    for (const auto& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
    args.push_back(nullptr);
    ::execvp(args[0], args.data());
    ::_exit(127);
  }
  // Set it from both sides: a signal to the group right after the fork must reach it.
  if (own_group && pid_ > 0) ::setpgid(pid_, pid_);
}

Background::~Background() {
  if (pid_ > 0 && !reaped_) {
    if (own_group_) ::kill(-pid_, SIGKILL);
    ::kill(pid_, SIGKILL);
    wait();
  } else if (pid_ > 0 && own_group_) {
    ::kill(-pid_, SIGKILL);  // what the leader started may outlive it
  }
}

void Background::signal(int signal_number) {
  if (!reaped_) ::kill(pid_, signal_number);
}

void Background::signal_group(int signal_number) { ::kill(-pid_, signal_number); }

bool Background::finished() {
  if (reaped_) return true;
  rusage usage{};
  pid_t done = ::wait4(pid_, &status_, WNOHANG, &usage);
  if (done == pid_) {
    reaped_ = true;
    max_rss_kib_ = usage.ru_maxrss;
  }
  return reaped_;
}

ProcessResult Background::wait() {
  if (!reaped_) {
    rusage usage{};
    while (::wait4(pid_, &status_, 0, &usage) < 0 && errno == EINTR) {
    }
    reaped_ = true;
    max_rss_kib_ = usage.ru_maxrss;
  }
  ProcessResult result;
  if (WIFEXITED(status_)) result.exit_code = WEXITSTATUS(status_);
  if (WIFSIGNALED(status_)) result.signal = WTERMSIG(status_);
  // Killed before it opened its stderr file: nothing to read.
  std::error_code ec;
  if (std::filesystem::exists(err_file_, ec)) result.err = read_file(err_file_);
  if (!out_file_.empty() && std::filesystem::exists(out_file_, ec)) result.out = read_file(out_file_);
  return result;
}

bool eventually(const std::function<bool()>& condition, int seconds) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  while (std::chrono::steady_clock::now() < deadline) {
    if (condition()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return condition();
}

}  // namespace capsa::test
