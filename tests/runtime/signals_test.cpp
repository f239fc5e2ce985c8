// Exit status and signals (issue 4 items 2 and 7): the command's exit status is capsa's;
// a command killed by a signal kills capsa with the same signal (as Apptainer's starter
// re-raises it), which a shell reports as 128+n; SIGTERM, SIGINT and SIGUSR1 sent to the
// capsa process reach the command, also through --containall's init; afterwards no
// FUSE server, init or mount is left. Root and test user.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <sstream>
#include <thread>

#include "runtime/run_support.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"
#include "support/test_env.hpp"

namespace capsa::runtime {
namespace {

using testing::busybox_sif;
using testing::capsa;

TEST(Signals, ExitStatusIsTheCommands) {
  for (int code : {0, 3, 255}) {
    auto result = capsa({"exec", busybox_sif(), "sh", "-c", "exit " + std::to_string(code)});
    EXPECT_EQ(result.exit_code, code) << result.err;
  }
  EXPECT_EQ(capsa({"run", busybox_sif(), "sh", "-c", "exit 3"}).exit_code, 3);
  EXPECT_EQ(capsa({"shell", busybox_sif()}, {}, "exit 3\n").exit_code, 3);
}

TEST(Signals, ACommandKilledByASignalKillsCapsaWithIt) {
  for (const std::string flag : {"--userns", "--containall"}) {
    auto result = capsa({"exec", flag, busybox_sif(), "sh", "-c", "kill -TERM $$"});
    EXPECT_EQ(result.exit_code, -1) << flag;
    EXPECT_EQ(result.signal, SIGTERM) << flag << ": " << result.err;
  }
  // What a job script sees.
  auto shell = test::run_process({"sh", "-c", "\"$0\" exec \"$1\" sh -c 'kill -KILL $$'; echo $?", test::capsa_binary(), busybox_sif()});
  EXPECT_EQ(shell.out, "137\n") << shell.err;
}

// capsa running in the background, for signals; the child's stdout and stderr go to files.
class Background {
 public:
  Background(const std::vector<std::string>& args, const std::string& log) {
    pid_ = ::fork();
    if (pid_ == 0) {
      // Dispositions as a job script would give them, whatever the test runner set.
      for (int sig : {SIGINT, SIGTERM, SIGUSR1, SIGQUIT}) ::signal(sig, SIG_DFL);
      sigset_t none;
      sigemptyset(&none);
      ::sigprocmask(SIG_SETMASK, &none, nullptr);
      int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      ::dup2(fd, 1);
      ::dup2(fd, 2);
      std::vector<char*> argv;
      std::string binary = test::capsa_binary();
      argv.push_back(binary.data());
      std::vector<std::string> copy = args;
      for (auto& a : copy) argv.push_back(a.data());
      argv.push_back(nullptr);
      ::execv(binary.c_str(), argv.data());
      ::_exit(127);
    }
  }
  ~Background() {
    if (pid_ > 0 && !reaped_) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  pid_t pid() const { return pid_; }
  // The wait status, or -1 when it has not ended within `seconds` (then it is killed).
  int wait(int seconds) {
    for (int i = 0; i < seconds * 20; ++i) {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        reaped_ = true;
        return status;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return -1;
  }

 private:
  pid_t pid_ = -1;
  bool reaped_ = false;
};

// Waits until `path` holds `count` lines (the script records each signal on a line).
bool wait_for_lines(const std::string& path, std::size_t count, int seconds = 60) {
  for (int i = 0; i < seconds * 20; ++i) {
    if (std::filesystem::exists(path)) {
      std::string text = test::read_file(path);
      if (static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n')) >= count) return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

// Processes of this user whose command line names `needle`.
int processes_naming(const std::string& needle) {
  auto result = test::run_process({"ps", "-o", "args=", "-u", std::to_string(::getuid())});
  std::istringstream lines(result.out);
  int live = 0;
  for (std::string line; std::getline(lines, line);)
    if (line.find(needle) != std::string::npos && line.find("ps -o") == std::string::npos) ++live;
  return live;
}

class SignalDelivery : public ::testing::TestWithParam<std::string> {};

TEST_P(SignalDelivery, TermIntAndUsr1ReachTheCommand) {
  test::TempDir dir;
  // A private copy of the image: its FUSE server and any init are told apart by its name.
  std::string image = dir / "signal-check.sif";
  ASSERT_EQ(test::run_process({"cp", busybox_sif(), image}).exit_code, 0);
  std::string record = dir / "record";
  std::string script =
      "trap 'echo USR1 >> " + record + "' USR1\n"
      "trap 'echo INT >> " + record + "' INT\n"
      "trap 'echo TERM >> " + record + "; exit 7' TERM\n"
      "echo ready >> " + record + "\n"
      "while :; do sleep 0.05; done\n";
  // Bound explicitly: --containall gives the container an empty /tmp of its own.
  std::vector<std::string> args = {"exec", "-B", dir.path()};
  if (!GetParam().empty()) args.push_back(GetParam());
  args.insert(args.end(), {image, "sh", "-c", script});
  Background capsa_process(args, dir / "log");
  ASSERT_TRUE(wait_for_lines(record, 1)) << test::read_file(dir / "log");
  ::kill(capsa_process.pid(), SIGUSR1);
  ASSERT_TRUE(wait_for_lines(record, 2)) << test::read_file(record);
  ::kill(capsa_process.pid(), SIGINT);
  ASSERT_TRUE(wait_for_lines(record, 3)) << test::read_file(record);
  ::kill(capsa_process.pid(), SIGTERM);
  int status = capsa_process.wait(60);
  ASSERT_NE(status, -1) << "capsa did not end after SIGTERM";
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 7) << "status " << status << ": " << test::read_file(dir / "log");
  EXPECT_EQ(test::read_file(record), "ready\nUSR1\nINT\nTERM\n");
  // Nothing outlives the command: no FUSE server, no init, no mount.
  int left = 0;
  for (int i = 0; i < 100 && (left = processes_naming(image)) > 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(left, 0) << "a process serving " << image << " is still there";
  EXPECT_EQ(test::read_file("/proc/self/mountinfo").find(dir.path()), std::string::npos) << "a mount leaked to the host";
}

INSTANTIATE_TEST_SUITE_P(Modes, SignalDelivery, ::testing::Values("", "--userns", "--containall"),
                         [](const auto& info) {
                           return info.param.empty() ? std::string("Default") : info.param.substr(2);
                         });

}  // namespace
}  // namespace capsa::runtime
