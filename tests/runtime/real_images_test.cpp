// Images users already have (issue 4 item 6): the busybox SIF that Singularity 3.8.1
// pulled (tests/fixtures/upstream/sif/real, see its README) with every action, and run as
// `./image.sif ARGS` through its `#!/usr/bin/env run-singularity` launch line.
// The Debian image with python3 from the test registry is in debian_image_test.cpp.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "runtime/run_support.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"
#include "support/test_env.hpp"

namespace capsa::runtime {
namespace {

using testing::busybox_sif;
using testing::capsa;

TEST(RealImages, BusyboxRunsItsRunscript) {
  // Docker's CMD ["sh"] became the runscript: arguments replace it...
  auto with_args = capsa({"run", busybox_sif(), "echo", "a", "b"});
  EXPECT_EQ(with_args.exit_code, 0) << with_args.err;
  EXPECT_EQ(with_args.out, "a b\n");
  // ...without arguments sh runs, here reading a script on stdin.
  auto without = capsa({"run", busybox_sif()}, {}, "echo from-sh; exit 5\n");
  EXPECT_EQ(without.out, "from-sh\n") << without.err;
  EXPECT_EQ(without.exit_code, 5);
}

TEST(RealImages, BusyboxExec) {
  auto result = capsa({"exec", busybox_sif(), "sh", "-c", "echo $((6*7)); busybox | head -n 1 | cut -d' ' -f1,2"});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.out, "42\nBusyBox v1.33.1\n");
}

TEST(RealImages, BusyboxShellReadsAScriptOnStdin) {
  auto result = capsa({"shell", busybox_sif()}, {}, "cd /; ls -d .singularity.d; echo \"$SHELL\"; exit 4\n");
  EXPECT_EQ(result.out, ".singularity.d\n/bin/sh\n") << result.err;
  EXPECT_EQ(result.exit_code, 4);
}

TEST(RealImages, BusyboxTestPassesWithoutATestScript) {
  auto result = capsa({"test", busybox_sif()});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.out, "");
}

TEST(RealImages, BusyboxRunHelp) {
  auto result = capsa({"run-help", busybox_sif()});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.out, "No help sections were defined for this image\n");
}

TEST(RealImages, TheImageFileRunsItself) {
  test::TempDir dir;
  std::string image = dir / "busybox.sif";
  std::filesystem::copy_file(busybox_sif(), image);
  ASSERT_EQ(::chmod(image.c_str(), 0755), 0);
  std::filesystem::create_directory(dir / "bin");
  std::filesystem::create_symlink(test::capsa_binary(), dir / "bin/run-singularity");
  const char* path = std::getenv("PATH");
  auto result = test::run_process({"env", "PATH=" + (dir / "bin") + ":" + (path ? path : "/usr/bin:/bin"), image, "echo", "direct"});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.out, "direct\n");
}

}  // namespace
}  // namespace capsa::runtime
