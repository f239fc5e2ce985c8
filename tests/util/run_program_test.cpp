#include "util/run_program.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <string>

#include "util/error.hpp"
#include "util/fd.hpp"

namespace capsa {
namespace {

// The children of this thread not reaped yet (zombies included).
std::string children() {
  const std::string tid = std::to_string(::syscall(SYS_gettid));
  return read_whole_file("/proc/self/task/" + tid + "/children");
}

TEST(RunProgram, ExecArrayPointsIntoTheStringsAndEndsWithNull) {
  const std::vector<std::string> strings = {"sh", "-c", "true"};
  std::vector<char*> array = exec_array(strings);
  ASSERT_EQ(array.size(), 4u);
  for (std::size_t i = 0; i < strings.size(); ++i) EXPECT_EQ(array[i], strings[i].c_str());
  EXPECT_EQ(array[3], nullptr);
  EXPECT_EQ(exec_array({}), std::vector<char*>{nullptr});
}

TEST(RunProgram, ReportsTheStatusAsAShellDoes) {
  EXPECT_EQ(run_to_end({.argv = {"sh", "-c", "exit 3"}}).code(), 3);
  EXPECT_EQ(run_to_end({.argv = {"sh", "-c", "kill -TERM $$"}}).code(), 128 + SIGTERM);
  EXPECT_TRUE(run_to_end({.argv = {"/bin/true"}}).success());
}

TEST(RunProgram, AProgramThatCannotRunExits127WithOneLine) {
  Captured missing = run_captured({.argv = {"capsa-no-such-program"}}, "");
  EXPECT_EQ(missing.status.code(), 127);
  // ENOENT, or EACCES when a directory on PATH cannot be searched (as the test user).
  const std::string line = "capsa: error: cannot run capsa-no-such-program: ";
  EXPECT_EQ(missing.err.substr(0, line.size()), line) << missing.err;
  EXPECT_EQ(missing.err.find('\n'), missing.err.size() - 1) << missing.err;
  EXPECT_THROW(run_to_end({}), Error);
}

TEST(RunProgram, FeedsStdinAndCapturesStdoutAndStderr) {
  Captured result = run_captured({.argv = {"sh", "-c", "cat; echo done >&2; exit 4"}}, "hello\nworld\n");
  EXPECT_EQ(result.out, "hello\nworld\n");
  EXPECT_EQ(result.err, "done\n");
  EXPECT_EQ(result.status.code(), 4);
  EXPECT_EQ(children(), "");
}

TEST(RunProgram, TheEnvironmentIsTheOneGivenOrTheCallers) {
  const std::vector<std::string> print = {"sh", "-c", "echo \"${CAPSA_TEST_VALUE-unset}\""};
  ::setenv("CAPSA_TEST_VALUE", "inherited", 1);
  Captured inherited = run_captured({.argv = print}, "");
  Captured given = run_captured({.argv = print, .env = std::vector<std::string>{"CAPSA_TEST_VALUE=given"}}, "");
  Captured none = run_captured({.argv = print, .env = std::vector<std::string>{"PATH=/usr/bin:/bin"}}, "");
  ::unsetenv("CAPSA_TEST_VALUE");
  EXPECT_EQ(inherited.out, "inherited\n");
  EXPECT_EQ(given.out, "given\n");
  EXPECT_EQ(none.out, "unset\n");
}

// Both directions at once, far beyond a pipe's buffer: served one at a time, the
// program would block writing its output while capsa blocks writing its input.
TEST(RunProgram, LargeInputAndOutputTogetherDoNotDeadlock) {
  std::string input(8 << 20, 'x');
  for (std::size_t i = 0; i < input.size(); i += 4096) input[i] = static_cast<char>('a' + i / 4096 % 26);
  Captured result = run_captured({.argv = {"sh", "-c", "tee /dev/stderr"}}, input, {.max_output = 16 << 20});
  EXPECT_EQ(result.status.code(), 0);
  EXPECT_TRUE(result.out == input) << result.out.size() << " bytes out";
  EXPECT_TRUE(result.err == input) << result.err.size() << " bytes err";
  Captured capped = run_captured({.argv = {"cat"}}, input, {.max_output = 1000});
  EXPECT_EQ(capped.out, input.substr(0, 1000));
  EXPECT_TRUE(capped.status.success());
}

TEST(RunProgram, AProgramThatDoesNotReadItsInputIsNoError) {
  // Default SIGPIPE would end this test binary: the guard must not depend on it being set.
  struct sigaction default_action {
  }, saved{};
  default_action.sa_handler = SIG_DFL;
  ASSERT_EQ(::sigaction(SIGPIPE, &default_action, &saved), 0);
  Captured result = run_captured({.argv = {"sh", "-c", "exec 0<&-; sleep 0.5; echo no"}}, std::string(4 << 20, 'x'));
  EXPECT_EQ(result.out, "no\n");
  EXPECT_TRUE(result.status.success());
  sigset_t pending, mask;
  ::sigpending(&pending);
  ::sigprocmask(SIG_BLOCK, nullptr, &mask);
  ::sigaction(SIGPIPE, &saved, nullptr);
  EXPECT_FALSE(sigismember(&pending, SIGPIPE)) << "SIGPIPE left pending";
  EXPECT_FALSE(sigismember(&mask, SIGPIPE)) << "SIGPIPE left blocked";
}

TEST(RunProgram, AProgramThatOutlivesTheTimeoutIsKilledAndReaped) {
  const auto start = std::chrono::steady_clock::now();
  try {
    run_captured({.argv = {"sleep", "30"}}, "", {.timeout = std::chrono::milliseconds(300)});
    ADD_FAILURE() << "no timeout";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "sleep did not finish within 300 ms");
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  EXPECT_EQ(children(), "");
}

}  // namespace
}  // namespace capsa
