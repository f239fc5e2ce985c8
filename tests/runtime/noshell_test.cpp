// An image without /bin/sh (tests/fixtures/make-oci-noshell.sh: a static busybox under a
// few applet names), pulled from the test registry: Docker ENV and injected variables
// reach the process, run follows ENTRYPOINT and CMD, a missing command is Apptainer's
// 127. Runs as root and as the unprivileged test user.
#include <gtest/gtest.h>
#include <unistd.h>

#include "runtime/run_support.hpp"
#include "support/test_registry.hpp"

namespace capsa::runtime {
namespace {

using testing::capsa;

class NoShell : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    work = new test::TempDir;
    image = new std::string(*work / "noshell.sif");
    auto pulled = capsa({"pull", "--nohttps", *image, "docker://" + test::test_registry().plain + "/public/noshell:latest"},
                        {"CAPSA_CACHEDIR=" + *work / "cache"});
    ASSERT_EQ(pulled.exit_code, 0) << pulled.err;
  }
  static void TearDownTestSuite() {
    delete image;
    delete work;
  }
  void SetUp() override { ASSERT_EQ(::chdir("/"), 0); }

  static test::TempDir* work;
  static std::string* image;
};
test::TempDir* NoShell::work = nullptr;
std::string* NoShell::image = nullptr;

bool has(const std::string& text, const std::string& line) { return testing::has_line(text, line); }

TEST_F(NoShell, DockerEnvReachesTheProcess) {
  auto r = capsa({"exec", *image, "env"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(has(r.out, "GREETING=hello from docker ENV")) << r.out;
  EXPECT_TRUE(has(r.out, "QUOTED=a \"b\" $c `d` \\e 'f'")) << r.out;
  EXPECT_TRUE(has(r.out, "EMPTY=")) << r.out;
  // The image's PATH, then the default entries it lacks: what the action script makes of
  // it in an image with a shell.
  EXPECT_TRUE(has(r.out, "PATH=/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin")) << r.out;
  EXPECT_TRUE(has(r.out, "LD_LIBRARY_PATH=/.singularity.d/libs")) << r.out;
  EXPECT_TRUE(has(r.out, "APPTAINER_CONTAINER=" + *image)) << r.out;
  EXPECT_EQ(r.err, "");
}

TEST_F(NoShell, InjectedVariablesWinAndCleanenvStillGetsTheImagesEnv) {
  auto r = capsa({"exec", "--env", "GREETING=from --env", "--cleanenv", *image, "env"},
                 {"APPTAINERENV_INJECTED=yes", "CAPSA_HOST_ONLY=host"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(has(r.out, "GREETING=from --env")) << r.out;
  EXPECT_TRUE(has(r.out, "INJECTED=yes")) << r.out;
  EXPECT_TRUE(has(r.out, "EMPTY=")) << r.out;
  EXPECT_EQ(r.out.find("CAPSA_HOST_ONLY"), std::string::npos) << r.out;
}

TEST_F(NoShell, RunFollowsEntrypointAndCmd) {
  auto plain = capsa({"run", *image});
  EXPECT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_EQ(plain.out, "entry: from-cmd\n");
  auto args = capsa({"run", *image, "one", "two words"});
  EXPECT_EQ(args.out, "entry: one two words\n") << args.err;
}

TEST_F(NoShell, ExecRunsTheCommandFromTheImagesPath) {
  auto r = capsa({"exec", *image, "echo", "a  b", "$HOME"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "a  b $HOME\n") << "arguments are passed as they are";
  auto id = capsa({"exec", *image, "id", "-u"});
  EXPECT_EQ(id.out, std::to_string(::getuid()) + "\n") << id.err;
}

TEST_F(NoShell, MissingCommandIs127WithApptainersWords) {
  auto r = capsa({"exec", *image, "sh", "-c", "true"});
  EXPECT_EQ(r.exit_code, 127);
  EXPECT_EQ(r.err, "capsa: error: \"sh\": executable file not found in $PATH\n");
}

TEST_F(NoShell, TestPassesWithoutATestScriptAndShellExplains) {
  auto tested = capsa({"test", *image});
  EXPECT_EQ(tested.exit_code, 0) << tested.err;
  auto shell = capsa({"shell", *image});
  EXPECT_EQ(shell.exit_code, 1);
  EXPECT_EQ(shell.err, "capsa: error: the image has no shell (/bin/sh is missing; use `capsa exec IMAGE COMMAND`)\n");
}

}  // namespace
}  // namespace capsa::runtime
