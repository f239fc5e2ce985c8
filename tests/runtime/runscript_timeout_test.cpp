// --runscript-timeout (APPTAINER_RUNSCRIPT_TIMEOUT; runtime/script_watchdog.hpp): the
// environment files must be read, and the runscript reached, within the deadline; past it
// the command an environment file runs is killed, one line names it, and the run ends 255
// as Apptainer's does. The runscript itself has no deadline. Root and the test user.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>

#include "runtime/run_support.hpp"

namespace capsa::runtime {
namespace {

using testing::capsa;
using testing::ImageFile;

constexpr const char* kRunscript = "/.singularity.d/runscript";

std::string image_with(const test::TempDir& dir, const std::string& name, const std::string& environment,
                       const std::string& runscript = "#!/bin/sh\necho runscript ran\n") {
  return testing::make_image(
      dir, name,
      {ImageFile{"/.singularity.d/env/91-slow.sh", environment, 0755}, ImageFile{kRunscript, runscript, 0755}});
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

TEST(RunscriptTimeout, StopsASlowEnvironmentFile) {
  test::TempDir dir;
  const std::string image = image_with(dir, "slow", "sleep 30\n");
  const auto start = std::chrono::steady_clock::now();
  auto r = capsa({"run", "--runscript-timeout", "1s", image});
  EXPECT_LT(seconds_since(start), 15.0) << "stopped at the deadline, not after the sleep";
  EXPECT_EQ(r.exit_code, 255) << r.err;
  EXPECT_EQ(r.out, "") << "the runscript never ran";
  EXPECT_EQ(r.err, "capsa: error: command \"sleep 30\" was killed after 1s timeout (--runscript-timeout)\n");
  // The variable says the same.
  r = capsa({"run", image}, {"APPTAINER_RUNSCRIPT_TIMEOUT=1500ms"});
  EXPECT_EQ(r.exit_code, 255) << r.err;
  EXPECT_NE(r.err.find("was killed after 1.5s timeout"), std::string::npos) << r.err;
}

TEST(RunscriptTimeout, StopsAShellLoopWithoutACommand) {
  test::TempDir dir;
  const std::string image = image_with(dir, "loop", "while :; do :; done\n");
  auto r = capsa({"run", "--runscript-timeout", "1s", image});
  EXPECT_EQ(r.exit_code, 255) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "capsa: error: the environment scripts were stopped after 1s timeout (--runscript-timeout)\n");
}

TEST(RunscriptTimeout, UnderTheLimitNothingChangesAndTheRunscriptHasNoDeadline) {
  test::TempDir dir;
  const std::string image =
      image_with(dir, "quick", "sleep 1\nexport FROM_ENV=yes\n", "#!/bin/sh\nsleep 3\necho \"ran $FROM_ENV $1\"\n");
  auto r = capsa({"run", "--runscript-timeout", "2s", image, "arg"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "ran yes arg\n");
  EXPECT_EQ(r.err, "");
  // The watchdog's pipes (single digits) do not reach the runscript: no pipe on 3 to 9.
  const std::string fds = image_with(dir, "fds", "true\n", "#!/bin/sh\nls -l /proc/$$/fd\n");
  r = capsa({"run", fds});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  int pipes = 0;
  for (const std::string& line : testing::lines_of(r.out)) {
    const auto arrow = line.find(" -> ");
    if (arrow == std::string::npos || line.find("pipe:") == std::string::npos) continue;
    const std::string fd = line.substr(line.rfind(' ', arrow - 1) + 1, arrow - line.rfind(' ', arrow - 1) - 1);
    if (fd.size() == 1 && fd >= "3") ++pipes;
  }
  EXPECT_EQ(pipes, 0) << r.out;
}

TEST(RunscriptTimeout, TheWatchdogIsNoChildOfTheRunscript) {
  // A command that waits for, or counts, every child it has must not find the watchdog
  // (alive, or a zombie once it has answered): cat, executed in the runscript's place
  // (the same process, which never waited for a child), lists its own children.
  test::TempDir dir;
  const std::string image = image_with(dir, "children", "true\n", "#!/bin/sh\nexec cat /proc/$$/task/$$/children\n");
  auto r = capsa({"run", image});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "");
}

TEST(RunscriptTimeout, ABadDurationIsOneLine) {
  auto r = capsa({"run", "--runscript-timeout", "5", testing::busybox_sif()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find("--runscript-timeout 5: not a duration"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace capsa::runtime
