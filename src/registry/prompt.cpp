// --docker-login: username with echo, password without, on the controlling terminal.
#include <fcntl.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>

#include "registry/credentials.hpp"
#include "util/error.hpp"
#include "util/fd.hpp"

namespace capsa::registry {

namespace {

// Turns terminal echo off for its lifetime (a no-op when in_fd is not a terminal).
class EchoOff {
 public:
  explicit EchoOff(int fd) : fd_(fd) {
    if (::tcgetattr(fd_, &saved_) != 0) return;
    termios quiet = saved_;
    quiet.c_lflag &= ~static_cast<tcflag_t>(ECHO);
    quiet.c_lflag |= ECHONL;
    active_ = ::tcsetattr(fd_, TCSAFLUSH, &quiet) == 0;
  }
  EchoOff(const EchoOff&) = delete;
  EchoOff& operator=(const EchoOff&) = delete;
  ~EchoOff() {
    if (active_) ::tcsetattr(fd_, TCSANOW, &saved_);
  }

 private:
  int fd_;
  termios saved_{};
  bool active_ = false;
};

void say(int fd, const std::string& text) { write_all(fd, {reinterpret_cast<const std::uint8_t*>(text.data()), text.size()}); }

// One line, byte by byte so nothing after the newline is consumed.
std::string read_line(int fd) {
  std::string line;
  for (;;) {
    char c;
    const ssize_t got = ::read(fd, &c, 1);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) throw_errno("reading from the terminal");
    if (got == 0) {
      if (line.empty()) throw Error("no input for the docker login prompt (end of file)");
      break;
    }
    if (c == '\n') break;
    if (c != '\r') line += c;
    if (line.size() > 64 * 1024) throw Error("docker login input line is too long");
  }
  return line;
}

}  // namespace

Credentials prompt_for_credentials(int in_fd, int out_fd, const std::string& registry) {
  Credentials credentials;
  credentials.source = "--docker-login";
  say(out_fd, "Enter Docker Username for " + registry + ": ");
  credentials.username = read_line(in_fd);
  {
    // Echo goes off before the prompt appears, so nothing typed after it is ever shown.
    EchoOff quiet(in_fd);
    say(out_fd, "Enter Docker Password: ");
    credentials.password = read_line(in_fd);
  }
  if (credentials.username.empty()) throw Error("--docker-login: the username is empty");
  return credentials;
}

std::string prompt_for_password_on_tty(const std::string& prompt) {
  UniqueFd tty(::open("/dev/tty", O_RDWR | O_CLOEXEC | O_NOCTTY));
  if (!tty) throw Error("no password given and no terminal to ask for one on (use --password-stdin)");
  std::string password;
  {
    EchoOff quiet(tty.get());
    say(tty.get(), prompt);
    password = read_line(tty.get());
  }
  if (password.empty()) throw Error("a password is required");
  return password;
}

Credentials prompt_for_credentials_on_tty(const std::string& registry) {
  UniqueFd tty(::open("/dev/tty", O_RDWR | O_CLOEXEC | O_NOCTTY));
  if (!tty) throw_errno("--docker-login needs a terminal: /dev/tty");
  return prompt_for_credentials(tty.get(), tty.get(), registry);
}

}  // namespace capsa::registry
