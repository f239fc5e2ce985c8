// The docker-credential-helpers protocol: `docker-credential-<name> get`, the server URL on
// stdin, JSON {"ServerURL","Username","Secret"} on stdout. The secret travels only through
// the pipe, never through argv or the environment.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <nlohmann/json.hpp>

#include "registry/credentials.hpp"
#include "registry/json_fields.hpp"
#include "util/error.hpp"
#include "util/fd.hpp"

namespace capsa::registry {

namespace {

constexpr int kHelperTimeoutSeconds = 60;
constexpr size_t kMaxHelperOutput = 1 << 20;

// A started child that is killed and reaped if its owner leaves early.
class Child {
 public:
  explicit Child(pid_t pid) : pid_(pid) {}
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  ~Child() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      wait();
    }
  }
  int wait() {
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
    return status;
  }

 private:
  pid_t pid_;
};

void make_pipe(UniqueFd& read_end, UniqueFd& write_end) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw_errno("pipe");
  read_end.reset(fds[0]);
  write_end.reset(fds[1]);
}

bool valid_helper_name(const std::string& name) {
  return !name.empty() && std::all_of(name.begin(), name.end(), [](unsigned char c) {
    return std::isalnum(c) || c == '-' || c == '_' || c == '.';
  }) && name.find("..") == std::string::npos;
}

struct HelperOutput {
  std::string out;
  std::string err;
};

// Feeds stdin and collects stdout/stderr with poll, so a helper that fills one pipe while
// we wait on the other cannot deadlock, and a hung helper is killed after the timeout.
HelperOutput exchange(UniqueFd in, UniqueFd out, UniqueFd err, const std::string& input, const std::string& program) {
  HelperOutput output;
  size_t written = 0;
  timespec start{};
  ::clock_gettime(CLOCK_MONOTONIC, &start);
  ::fcntl(in.get(), F_SETFL, O_NONBLOCK);
  while (out || err) {
    pollfd fds[3] = {{out.get(), POLLIN, 0}, {err.get(), POLLIN, 0}, {in.get(), POLLOUT, 0}};
    if (::poll(fds, 3, 1000) < 0 && errno != EINTR) throw_errno("poll on " + program);
    timespec now{};
    ::clock_gettime(CLOCK_MONOTONIC, &now);
    if (now.tv_sec - start.tv_sec > kHelperTimeoutSeconds)
      throw Error(program + " did not answer within " + std::to_string(kHelperTimeoutSeconds) + " s");
    for (int i = 0; i < 2; ++i) {
      if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      char buffer[4096];
      const ssize_t got = ::read(fds[i].fd, buffer, sizeof buffer);
      std::string& sink = i == 0 ? output.out : output.err;
      if (got > 0 && sink.size() < kMaxHelperOutput) sink.append(buffer, static_cast<size_t>(got));
      if (got == 0 || (got < 0 && errno != EINTR && errno != EAGAIN)) (i == 0 ? out : err).reset();
    }
    if (in && (fds[2].revents & (POLLOUT | POLLERR | POLLHUP))) {
      const ssize_t put = ::write(in.get(), input.data() + written, input.size() - written);
      if (put > 0) written += static_cast<size_t>(put);
      if ((put < 0 && errno != EAGAIN && errno != EINTR) || written == input.size()) in.reset();
    }
  }
  return output;
}

std::string first_line(const std::string& text) {
  std::string line = text.substr(0, text.find('\n'));
  if (line.size() > 200) line = line.substr(0, 200) + "…";
  return line;
}

}  // namespace

std::optional<Credentials> run_credential_helper(const std::string& helper, const std::string& server_url) {
  if (!valid_helper_name(helper)) throw FormatError("invalid credential helper name '" + helper + "' in the docker config");
  const std::string program = "docker-credential-" + helper;
  UniqueFd in_read, in_write, out_read, out_write, err_read, err_write;
  make_pipe(in_read, in_write);
  make_pipe(out_read, out_write);
  make_pipe(err_read, err_write);
  // SIGPIPE from a helper that exits without reading stdin must not kill us.
  ::signal(SIGPIPE, SIG_IGN);
  const pid_t pid = ::fork();
  if (pid < 0) throw_errno("fork for " + program);
  if (pid == 0) {
    ::dup2(in_read.get(), 0);
    ::dup2(out_write.get(), 1);
    ::dup2(err_write.get(), 2);
    const char* argv[] = {program.c_str(), "get", nullptr};
    ::execvp(argv[0], const_cast<char* const*>(argv));
    ::_exit(127);
  }
  Child child(pid);
  in_read.reset();
  out_write.reset();
  err_write.reset();
  HelperOutput output = exchange(std::move(in_write), std::move(out_read), std::move(err_read), server_url, program);
  const int status = child.wait();
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
      throw Error("credential helper " + program + " (named in the docker config) is not on PATH");
    // The helpers' documented "not found" answer means: no credentials, go anonymous.
    std::string lowered = output.out + output.err;
    std::transform(lowered.begin(), lowered.end(), lowered.begin(), [](unsigned char c) { return std::tolower(c); });
    if (lowered.find("credentials not found") != std::string::npos) return std::nullopt;
    const std::string why = first_line(output.err.empty() ? output.out : output.err);
    throw Error("credential helper " + program + " failed for " + server_url + (why.empty() ? "" : ": " + why));
  }
  const auto reply = nlohmann::json::parse(output.out, nullptr, false);
  if (reply.is_discarded() || !reply.is_object() || !reply.contains("Secret") || !reply["Secret"].is_string())
    throw Error("credential helper " + program + " answered something that is not {\"Username\", \"Secret\"} JSON");
  Credentials credentials;
  credentials.source = program;
  credentials.username = string_field(reply, "Username");
  const std::string secret = reply["Secret"].get<std::string>();
  if (credentials.username == "<token>")
    credentials.identity_token = secret;
  else
    credentials.password = secret;
  return credentials;
}

}  // namespace capsa::registry
