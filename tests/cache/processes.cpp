#include "processes.hpp"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <stdexcept>

namespace capsa::cache::test {

StartGate::StartGate() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error("pipe");
  read_fd_ = fds[0];
  write_fd_ = fds[1];
}

StartGate::~StartGate() {
  if (read_fd_ >= 0) ::close(read_fd_);
  if (write_fd_ >= 0) ::close(write_fd_);
}

void StartGate::wait() const {
  ::close(write_fd_);  // our copy; EOF comes when the parent closes its own
  char byte;
  while (::read(read_fd_, &byte, 1) < 0) {
  }
}

void StartGate::open() {
  ::close(write_fd_);
  write_fd_ = -1;
}

pid_t spawn(const std::function<bool()>& body, unsigned hang_guard_seconds) {
  pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork");
  if (pid == 0) {
    ::alarm(hang_guard_seconds);
    bool ok = false;
    try {
      ok = body();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "child %d: %s\n", ::getpid(), e.what());
    }
    std::fflush(nullptr);
    ::_exit(ok ? 0 : 1);
  }
  return pid;
}

int wait_for(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::string pattern(std::size_t size, std::size_t offset) {
  std::string out(size, '\0');
  for (std::size_t i = 0; i < size; ++i) out[i] = static_cast<char>(((i + offset) * 131 + 7) & 0xff);
  return out;
}

int count_lines(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  std::string text = read_all(fd);
  ::close(fd);
  int lines = 0;
  for (char c : text) lines += c == '\n';
  return lines;
}

void append_line(const std::string& path, const std::string& line) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) throw std::runtime_error("open " + path);
  std::string text = line + "\n";
  // One write with O_APPEND: atomic between processes for a line this short.
  if (::write(fd, text.data(), text.size()) != static_cast<ssize_t>(text.size())) throw std::runtime_error("write");
  ::close(fd);
}

std::string read_all(int fd) {
  std::string out;
  char buf[65536];
  for (off_t offset = 0;;) {
    ssize_t n = ::pread(fd, buf, sizeof buf, offset);
    if (n <= 0) break;
    out.append(buf, static_cast<std::size_t>(n));
    offset += n;
  }
  return out;
}

}  // namespace capsa::cache::test
