// `capsa exec` killed with SIGKILL, which no handler sees, while it sets up a container
// and while the container runs: root's containers hold a loop device and kernel mounts
// (or, alone with a gzip image, capsa's FUSE server: runtime/lone_start.hpp), everyone
// else's a FUSE server and a user namespace. Afterwards nothing may be left:
// no mount in any namespace, no loop device on the image, no FUSE server, no process.
// Each container gets a private session directory (CAPSA_SESSION_DIR) and a private copy
// of the image, so that what other suites run at the same time is never counted.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <optional>

#include "support/background.hpp"
#include "support/leaks.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"
#include "support/test_env.hpp"

namespace capsa::runtime {
namespace {

namespace fs = std::filesystem;
using test::Background;
using test::eventually;
using test::joined;

class RunFaults : public ::testing::Test, protected test::PrivateContainers {
 protected:
  RunFaults() : PrivateContainers("run-faults.sif", "CAPSA_RUN_FAULTS_MARK") { fs::create_directories(shared); }

  const std::string shared = work / "shared";  // bound at /w: the container says it is ready there

  // `config`: a capsa.conf for the run ("": the default).
  std::vector<std::string> exec_argv(const std::string& script, const std::string& config = "") const {
    std::vector<std::string> argv = {"env", "CAPSA_SESSION_DIR=" + session, marker, test::capsa_binary()};
    if (!config.empty()) argv.insert(argv.end(), {"-c", config});
    argv.insert(argv.end(), {"exec", "-B", shared + ":/w", image, "sh", "-c", script});
    return argv;
  }
  // What a live container holds on the image: a loop device, or a FUSE server (a process
  // naming the image: the container's own has become `sleep`).
  bool image_is_on_a_loop_device() const { return !test::loop_devices_backed_by(image).empty(); }
  bool image_is_served_by_fuse() const { return !test::processes_with_argument(image).empty(); }

  // `on_a_loop_device`: how the image must be mounted; unset: either way (root alone
  // with the image gets FUSE, unless its claim's bucket is taken: lone_start.cpp).
  void kill_nine_while_running(const std::string& config, std::optional<bool> on_a_loop_device) {
    Background container(exec_argv("touch /w/ready; exec sleep 300", config), work / "container.err");
    ASSERT_TRUE(eventually([&] { return fs::exists(shared + "/ready") || container.finished(); }, 60) &&
                fs::exists(shared + "/ready"))
        << "the container ended early: " << test::read_file(work / "container.err");
    // The checks can see a live container: its mounts, and its loop device or FUSE server.
    EXPECT_FALSE(test::mounts_naming(session).empty());
    if (on_a_loop_device) {
      EXPECT_EQ(image_is_on_a_loop_device(), *on_a_loop_device);
      EXPECT_EQ(image_is_served_by_fuse(), !*on_a_loop_device);
    } else {
      EXPECT_TRUE(image_is_on_a_loop_device() || image_is_served_by_fuse());
    }
    container.signal(SIGKILL);
    EXPECT_EQ(container.wait().signal, SIGKILL);
    expect_nothing_left();
  }
};

// The image is gzip and no other container uses it: FUSE, as root too (as a rule).
TEST_F(RunFaults, KillNineOfARunningContainerLeavesNothing) {
  kill_nine_while_running("", ::geteuid() == 0 ? std::nullopt : std::optional<bool>(false));
}

TEST_F(RunFaults, KillNineOfARunningContainerOnTheKernelsSquashfsLeavesNothing) {
  if (::geteuid() != 0) GTEST_SKIP() << "only root mounts with the kernel";
  kill_nine_while_running(work.write("kernel.conf", "fuse for lone gzip images = no\n"), true);
}

// Slurm, a shell's job control or a timeout kill the whole process group: the container's
// children go with it, and with the last of them the namespace and every mount.
TEST_F(RunFaults, KillNineOfAContainersProcessGroupLeavesNothing) {
  Background container(exec_argv("sleep 300 & sleep 300 & (sleep 300; true) & touch /w/ready; wait"),
                       work / "container.err", /*own_group=*/true);
  ASSERT_TRUE(eventually([&] { return fs::exists(shared + "/ready") || container.finished(); }, 60) &&
              fs::exists(shared + "/ready"))
      << "the container ended early: " << test::read_file(work / "container.err");
  EXPECT_GE(test::processes_with_environment(marker).size(), 4u) << "the shell and its three children";
  container.signal_group(SIGKILL);
  EXPECT_EQ(container.wait().signal, SIGKILL);
  expect_nothing_left();
}

// SIGKILL at every stage of the set-up: before the namespace exists, between the loop
// device's configuration and its mount, while the FUSE server starts, during the mount
// plan, after pivot_root. Whatever the moment, the kernel takes everything back.
TEST_F(RunFaults, KillNineAtAnyMomentOfTheSetUpLeavesNothing) {
  int killed = 0, completed = 0;
  for (int delay_us = 0; delay_us <= 60000; delay_us += 2000) {
    Background container(exec_argv("true"), work / "container.err");
    ::usleep(static_cast<useconds_t>(delay_us));
    if (container.finished()) {
      ++completed;
      continue;
    }
    container.signal(SIGKILL);
    auto result = container.wait();
    if (result.signal == SIGKILL) ++killed;
  }
  EXPECT_GT(killed, 0) << "no start was interrupted (" << completed << " completed first)";
  expect_nothing_left();
  // And the image still runs: no loop device or lock was left half-configured.
  auto after = test::run_process(exec_argv("echo alive"), "", 60);
  EXPECT_EQ(after.out, "alive\n") << after.err;
  expect_nothing_left();
}

}  // namespace
}  // namespace capsa::runtime
