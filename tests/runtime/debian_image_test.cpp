// The Debian bookworm image with python3 from the test registry (docs/testing.md),
// run through a pulled SIF and straight from docker:// (issue 4 item 6). Root and test
// user; each run uses a private cache.
#include <gtest/gtest.h>

#include "runtime/run_support.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"
#include "support/test_env.hpp"
#include "support/test_registry.hpp"

namespace capsa::runtime {
namespace {

using testing::capsa;

constexpr const char* kPythonVersion = "import sys; print('%d.%d' % sys.version_info[:2])";

class DebianImage : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new test::TempDir;
    sif_ = *dir_ / "debian.sif";
    auto pulled = capsa({"pull", "--nohttps", sif_, reference()}, {"CAPSA_CACHEDIR=" + cache()});
    ASSERT_EQ(pulled.exit_code, 0) << pulled.err;
  }
  static void TearDownTestSuite() { delete dir_; }
  static std::string reference() { return "docker://" + test::test_registry().plain + "/public/debian:bookworm"; }
  static std::string cache() { return *dir_ / "cache"; }

  static test::TempDir* dir_;
  static std::string sif_;
};
test::TempDir* DebianImage::dir_ = nullptr;
std::string DebianImage::sif_;

TEST_F(DebianImage, Python3RunsFromThePulledSif) {
  auto result = capsa({"exec", sif_, "python3", "-c", kPythonVersion});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.out, "3.11\n");
}

TEST_F(DebianImage, Python3RunsStraightFromDocker) {
  auto result = capsa({"exec", "--quiet", reference(), "python3", "-c", kPythonVersion},
                      {"CAPSA_CACHEDIR=" + cache(), "APPTAINER_NOHTTPS=1"});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.out, "3.11\n");
}

TEST_F(DebianImage, DockerEnvWinsOverTheHostsValue) {
  // ENV LANG=C.UTF-8 is written as LANG="${LANG:-C.UTF-8}", but the image's scripts run
  // without the host's variables, so the image's value wins, as under Apptainer.
  auto result = capsa({"exec", sif_, "sh", "-c", "echo $LANG; echo $PATH"}, {"LANG=en_US.UTF-8"});
  EXPECT_EQ(result.out, "C.UTF-8\n/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\n") << result.err;
}

TEST_F(DebianImage, APseudoTerminalOpensUnderContain) {
  auto result = capsa({"exec", "--contain", sif_, "python3", "-c",
                       "import os, pty; m, s = pty.openpty(); print(os.ttyname(s))"});
  EXPECT_EQ(result.out, "/dev/pts/0\n") << result.err;
}

TEST_F(DebianImage, RunShellAndTest) {
  // CMD ["bash"]: `run` starts bash, which reads stdin.
  auto run = capsa({"run", sif_}, {}, "echo ${BASH_VERSION%%.*}\n");
  EXPECT_EQ(run.out, "5\n") << run.err;
  auto shell = capsa({"shell", sif_}, {}, "echo \"$SHELL\"; python3 -c 'print(6*7)'\n");
  EXPECT_EQ(shell.out, "/bin/bash\n42\n") << shell.err;
  EXPECT_EQ(capsa({"test", sif_}).exit_code, 0);
}

}  // namespace
}  // namespace capsa::runtime
