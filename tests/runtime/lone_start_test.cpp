// Root and gzip images (runtime/lone_start.hpp): a container that is the only one using a
// gzip image is served by capsa's FUSE server, one started beside it by the kernel's
// squashfs through a loop device. `max loop devices = 0` tells the two apart without
// looking inside the container: with it, only a FUSE-served start can run.
// (Unprivileged containers always use FUSE: the suite's .user run skips these.)
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

#include "runtime/run_support.hpp"
#include "support/test_env.hpp"

namespace capsa::runtime {
namespace {

int exit_status(pid_t pid) {
  int status = 0;
  if (::waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

class LoneStart : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "root only: unprivileged containers always use FUSE";
    // A copy of its own: no other test's container uses it.
    ASSERT_EQ(test::run_process({"cp", testing::busybox_sif(), image}).exit_code, 0);
    ASSERT_EQ(::mkdir(sync.c_str(), 0755), 0);
  }
  // A start that should be alone with the image, with no loop devices allowed. The
  // claim is per bucket of images (lone_start.cpp), and a container of another suite
  // running as root may hold the same bucket, or a server that served an earlier start
  // may still be ending: either sends the start to the kernel, which is refused here. So
  // such a refusal is tried again, for a bounded time; any other result is returned.
  test::ProcessResult alone(const std::vector<std::string>& command) {
    std::vector<std::string> args = {"-c", no_loops, "exec"};
    args.insert(args.end(), command.begin(), command.end());
    test::ProcessResult r;
    for (int attempt = 0; attempt < 100; ++attempt, ::usleep(100000)) {
      r = testing::capsa(args);
      if (r.err.find("`max loop devices = 0`") == std::string::npos) break;
    }
    return r;
  }
  // start_waiting_container, tried again (as `alone`) while the container ends before it
  // is ready.
  pid_t start_waiting_alone() {
    for (int attempt = 0; attempt < 100; ++attempt, ::usleep(100000)) {
      pid_t pid = testing::start_waiting_container(no_loops, image, sync);
      while (!std::filesystem::exists(sync + "/ready"))
        if (::waitpid(pid, nullptr, WNOHANG) == pid)
          break;
        else
          ::usleep(20000);
      if (std::filesystem::exists(sync + "/ready")) return pid;
    }
    return -1;
  }
  test::TempDir dir;
  std::string image = dir / "gzip.sif", sync = dir / "sync";
  std::string no_loops = dir.write("no-loops.conf", "max loop devices = 0\n");
};

TEST_F(LoneStart, ALoneGzipStartNeedsNoLoopDeviceAndReleasesItsClaimAtTheEnd) {
  auto first = alone({image, "echo", "ran"});
  EXPECT_EQ(first.out, "ran\n") << "served through FUSE: " << first.err;
  EXPECT_EQ(first.err, "");
  // The first container's server has ended, and its claim with it: the next is alone too.
  auto again = alone({image, "echo", "ran"});
  EXPECT_EQ(again.out, "ran\n") << again.err;
  EXPECT_EQ(testing::loop_devices_for(image), 0);
}

TEST_F(LoneStart, AStartBesideARunningContainerUsesTheKernel) {
  // The first is alone (FUSE, no loop device needed); the second, started while the first
  // runs, needs a loop device and is refused one.
  pid_t first = start_waiting_alone();
  ASSERT_GT(first, 0) << "the first container started";
  auto beside = testing::capsa({"-c", no_loops, "exec", image, "echo", "ran"});
  EXPECT_EQ(beside.exit_code, 1) << beside.out;
  EXPECT_NE(beside.err.find("`max loop devices = 0`"), std::string::npos) << beside.err;
  // With loop devices allowed, it runs on one while the first still runs through FUSE.
  auto shared = testing::capsa({"exec", image, "sh", "-c", "echo ran"});
  EXPECT_EQ(shared.out, "ran\n") << shared.err;
  dir.write("sync/go", "");
  EXPECT_EQ(exit_status(first), 0);
}

TEST_F(LoneStart, EveryUserInTheContainerReadsTheImageAsItsModesAllow) {
  // With --underlay the image's folders are bound in directly, not read through overlayfs
  // with root's credentials: a user the container switches to reaches the FUSE mount
  // itself, which lets it in (allow_other) and checks the image's modes for it
  // (default_permissions), as the kernel's squashfs does.
  const std::string as_nobody =
      "su -s /bin/sh nobody -c 'ls /bin | grep -qx busybox && echo lists; cat /etc/shadow >/dev/null || echo refused'";
  auto r = alone({"--underlay", image, "sh", "-c", as_nobody});
  EXPECT_EQ(r.out, "lists\nrefused\n") << r.err;
  EXPECT_EQ(r.exit_code, 0);
}

TEST_F(LoneStart, TheSiteCanKeepRootOnTheKernelAndOtherCompressionsStayThere) {
  std::string kernel_only = dir.write("kernel.conf", "max loop devices = 0\nfuse for lone gzip images = no\n");
  auto off = testing::capsa({"-c", kernel_only, "exec", image, "echo", "ran"});
  EXPECT_EQ(off.exit_code, 1) << off.out;
  EXPECT_NE(off.err.find("`max loop devices = 0`"), std::string::npos) << off.err;

  // A zstd image: the kernel inflates it as fast as capsa's server, and shares its pages.
  std::string zstd = dir / "zstd.sif";
  auto built = testing::capsa({"build", zstd, image});
  ASSERT_EQ(built.exit_code, 0) << built.err;
  auto lone_zstd = testing::capsa({"-c", no_loops, "exec", zstd, "echo", "ran"});
  EXPECT_EQ(lone_zstd.exit_code, 1) << lone_zstd.out;
  EXPECT_NE(lone_zstd.err.find("`max loop devices = 0`"), std::string::npos) << lone_zstd.err;
}

TEST_F(LoneStart, WithoutFuseRootMountsWithTheKernelAsBefore) {
  // /dev/null in place of /dev/fuse (in a mount namespace of the test's own): opening it
  // works, mounting FUSE with it fails. Without loop devices the kernel's mount is
  // refused, which shows it was tried; with them the run works.
  auto run = [&](const std::string& config) {
    const std::string command = "mount --bind /dev/null /dev/fuse && exec " + test::capsa_binary() + " -c " + config +
                                " exec " + image + " echo ran";
    return test::run_process({"unshare", "-m", "--propagation", "private", "sh", "-c", command});
  };
  auto refused = run(no_loops);
  EXPECT_EQ(refused.exit_code, 1) << refused.out;
  EXPECT_NE(refused.err.find("`max loop devices = 0`"), std::string::npos) << refused.err;
  auto kernel = run(dir.write("default.conf", ""));
  EXPECT_EQ(kernel.out, "ran\n") << kernel.err;
  EXPECT_EQ(kernel.err, "");
}

TEST_F(LoneStart, CapsaFuseSquashfuseLeavesRootOnTheKernel) {
  auto r = testing::capsa({"-c", no_loops, "exec", image, "echo", "ran"}, {"CAPSA_FUSE=squashfuse"});
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.err.find("`max loop devices = 0`"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace capsa::runtime
