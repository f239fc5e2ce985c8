// As root, containers of one image share one loop device, and the device goes away with
// the last of them; another image gets its own. (Unprivileged containers use FUSE: there
// is nothing to share, and the suite's .user run skips these.) Root would serve a gzip
// image that no other container uses through FUSE (runtime/lone_start.hpp): these run
// with `fuse for lone gzip images = no`, every container on the kernel's squashfs.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

#include "runtime/run_support.hpp"
#include "support/test_env.hpp"

namespace capsa::runtime {
namespace {

int ready_count(const std::string& sync) {
  int n = 0;
  for (const auto& entry : std::filesystem::directory_iterator(sync))
    if (entry.path().filename().string().rfind("ready.", 0) == 0) ++n;
  return n;
}

TEST(LoopSharing, ContainersOfOneImageShareOneLoopDeviceReleasedWithTheLast) {
  if (::geteuid() != 0) GTEST_SKIP() << "loop devices are used by root only; unprivileged containers use FUSE";
  test::TempDir dir;
  std::string image = dir / "shared.sif", other = dir / "other.sif", sync = dir / "sync";
  ASSERT_EQ(test::run_process({"cp", testing::busybox_sif(), image}).exit_code, 0);
  ASSERT_EQ(test::run_process({"cp", testing::busybox_sif(), other}).exit_code, 0);
  ASSERT_EQ(::mkdir(sync.c_str(), 0755), 0);
  std::string conf = dir.write("kernel.conf", "fuse for lone gzip images = no\n");

  // Started at the same moment: the lock around scan-and-attach must still give one device.
  constexpr int kSame = 6;
  std::vector<pid_t> pids;
  pids.reserve(kSame + 1);
  for (int i = 0; i < kSame; ++i)
    pids.push_back(testing::start_waiting_container(conf, image, sync, std::to_string(i)));
  pids.push_back(testing::start_waiting_container(conf, other, sync, "other"));
  for (int i = 0; i < 600 && ready_count(sync) < kSame + 1; ++i) ::usleep(100000);
  ASSERT_EQ(ready_count(sync), kSame + 1) << "every container started";

  EXPECT_EQ(testing::loop_devices_for(image), 1) << "one device for " << kSame << " containers of one image";
  EXPECT_EQ(testing::loop_devices_for(other), 1) << "another image (same bytes, another inode) gets its own";

  dir.write("sync/go", "");
  for (pid_t pid : pids) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
  }
  // Auto-clear may run just after the last mount goes: wait for it (bounded).
  for (int i = 0; i < 100 && testing::loop_devices_for(image) + testing::loop_devices_for(other) > 0; ++i)
    ::usleep(100000);
  EXPECT_EQ(testing::loop_devices_for(image), 0) << "released with the last container";
  EXPECT_EQ(testing::loop_devices_for(other), 0);
}

TEST(LoopSharing, ALaterContainerJoinsARunningOnesDevice) {
  if (::geteuid() != 0) GTEST_SKIP() << "loop devices are used by root only";
  test::TempDir dir;
  std::string image = dir / "joined.sif", sync = dir / "sync";
  ASSERT_EQ(test::run_process({"cp", testing::busybox_sif(), image}).exit_code, 0);
  ASSERT_EQ(::mkdir(sync.c_str(), 0755), 0);
  std::string conf = dir.write("kernel.conf", "fuse for lone gzip images = no\n");
  pid_t first = testing::start_waiting_container(conf, image, sync, "first");
  for (int i = 0; i < 600 && ready_count(sync) < 1; ++i) ::usleep(100000);
  ASSERT_EQ(ready_count(sync), 1);
  // Seen from inside the second container, while both run: still one device for the image.
  auto second = testing::capsa(
      {"-c", conf, "exec", image, "sh", "-c", "grep -lx '" + image + "' /sys/block/loop*/loop/backing_file | wc -l"});
  EXPECT_EQ(second.exit_code, 0) << second.err;
  EXPECT_EQ(second.out, "1\n");
  EXPECT_EQ(testing::loop_devices_for(image), 1);
  dir.write("sync/go", "");
  int status = 0;
  ASSERT_EQ(::waitpid(first, &status, 0), first);
  for (int i = 0; i < 100 && testing::loop_devices_for(image) > 0; ++i) ::usleep(100000);
  EXPECT_EQ(testing::loop_devices_for(image), 0);
}

}  // namespace
}  // namespace capsa::runtime
