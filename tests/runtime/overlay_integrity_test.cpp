// A writable overlay has one user at a time, and survives what happens to containers:
// a second writer is refused in one line naming the overlay and the process that holds
// it; read-only users share it; a container killed with SIGKILL in the middle of writing
// leaves an overlay e2fsck accepts and the next run mounts (also when its FUSE server is
// killed too, unprivileged: capsa repairs it first); a full overlay is ENOSPC inside.
// Nothing stays mounted, attached or running after any of these.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "runtime/overlay_support.hpp"
#include "runtime/run_support.hpp"
#include "support/background.hpp"
#include "support/leaks.hpp"
#include "support/test_env.hpp"

namespace capsa::runtime {
namespace {

namespace fs = std::filesystem;
using testing::capsa;

class OverlayIntegrity : public ::testing::Test, protected test::PrivateContainers {
 protected:
  OverlayIntegrity() : PrivateContainers("integrity.sif", "CAPSA_OVERLAY_INTEGRITY_MARK") {
    testing::make_apptainer_ext3_overlay(img);
  }
  void TearDown() override {
    expect_nothing_left();
    expect_nothing_left(img);
  }
  std::vector<std::string> env() const { return {"CAPSA_SESSION_DIR=" + session, marker}; }
  test::ProcessResult run(const std::vector<std::string>& args) { return capsa(args, env(), "", work.path()); }
  // `capsa exec ... sh -c SCRIPT` in the background, in a process group of its own.
  std::unique_ptr<test::Background> start(const std::vector<std::string>& flags, const std::string& script,
                                          const std::string& name = "background") {
    std::vector<std::string> argv = {"env"};
    for (const auto& e : env()) argv.push_back(e);
    argv.push_back(test::capsa_binary());
    argv.emplace_back("exec");
    argv.insert(argv.end(), flags.begin(), flags.end());
    argv.insert(argv.end(), {image, "sh", "-c", script});
    return std::make_unique<test::Background>(argv, work / (name + ".err"), true);
  }
  // Waits for a file the container makes (under the test's folder, which /tmp shows).
  bool appears(const std::string& path) {
    return test::eventually([&] { return fs::exists(path); }, 30);
  }
  const std::string img = work / "overlay.img";
};

TEST_F(OverlayIntegrity, ASecondWriterIsRefusedNamingTheOverlayAndTheHolder) {
  auto writer = start({"--overlay", img}, "echo x > /held && touch " + work / "ready" + " && exec sleep 60");
  ASSERT_TRUE(appears(work / "ready")) << test::read_file(work / "background.err");
  for (const std::string& second : {img, img + ":ro"}) {
    auto r = run({"exec", "--overlay", second, image, "true"});
    EXPECT_EQ(r.exit_code, 1) << second;
    EXPECT_EQ(r.out, "");
    const std::string expected =
        "capsa: error: overlay " + img + " is in use by another container (process " + std::to_string(writer->pid()) +
        ")" +
        (second == img ? ": a writable overlay has one user at a time (add :ro to share it read-only, or wait)\n"
                       : " that writes to it: wait until it ends\n");
    EXPECT_EQ(r.err, expected) << second;
  }
  writer->signal(SIGKILL);
  writer->wait();
  expect_nothing_left(img);
  auto after = run({"exec", "--overlay", img, image, "cat", "/held"});
  EXPECT_EQ(after.exit_code, 0) << after.err;
  EXPECT_EQ(after.out, "x\n");
}

TEST_F(OverlayIntegrity, ReadOnlyUsersShareItAndKeepWritersOut) {
  ASSERT_EQ(run({"exec", "--overlay", img, image, "sh", "-c", "echo shared > /shared"}).exit_code, 0);
  auto first = start({"--overlay", img + ":ro"},
                     "cat /shared > " + work / "first.tmp" + " && mv " + work / "first.tmp" + " " + work / "first" +
                         " && exec sleep 60",
                     "first");
  auto second = start({"--overlay", img + ":ro"},
                      "cat /shared > " + work / "second.tmp" + " && mv " + work / "second.tmp" + " " + work / "second" +
                          " && exec sleep 60",
                      "second");
  ASSERT_TRUE(appears(work / "first")) << test::read_file(work / "first.err");
  ASSERT_TRUE(appears(work / "second")) << test::read_file(work / "second.err");
  EXPECT_EQ(test::read_file(work / "first"), "shared\n");
  EXPECT_EQ(test::read_file(work / "second"), "shared\n");
  auto writer = run({"exec", "--overlay", img, image, "true"});
  EXPECT_EQ(writer.exit_code, 1);
  EXPECT_NE(writer.err.find("capsa: error: overlay " + img + " is in use by another container (process "),
            std::string::npos)
      << writer.err;
  first->signal(SIGKILL);
  second->signal(SIGKILL);
  first->wait();
  second->wait();
}

TEST_F(OverlayIntegrity, AContainerKilledMidWriteLeavesAnOverlayFsckAcceptsAndTheNextRunMounts) {
  auto writer = start({"--overlay", img},
                      "touch " + work / "ready" +
                          "; i=0; while :; do i=$((i+1)); mkdir -p /data/$i; "
                          "echo $i > /data/$i/f; dd if=/dev/zero of=/data/$i/blob bs=4k count=8 2>/dev/null; done");
  ASSERT_TRUE(appears(work / "ready")) << test::read_file(work / "background.err");
  ::usleep(500000);
  writer->signal_group(SIGKILL);  // the container and everything in its group, mid-write
  writer->wait();
  expect_nothing_left(img);
  auto fsck = testing::e2fs_tool({"e2fsck", "-fn", img});
  EXPECT_EQ(fsck.exit_code, 0) << fsck.out << fsck.err;
  auto next = run({"exec", "--overlay", img, image, "sh", "-c", "cat /data/1/f && echo mounted"});
  EXPECT_EQ(next.exit_code, 0) << next.err;
  EXPECT_EQ(next.out, "1\nmounted\n");
}

TEST_F(OverlayIntegrity, AnOverlayLeftUncleanIsRepairedBeforeItIsMountedWritable) {
  // fuse2fs killed with SIGKILL leaves the file system marked as not cleanly unmounted;
  // made here directly: the state e2fsprogs' debugfs sets is the same bit.
  auto dirty = testing::e2fs_tool({"debugfs", "-w", "-R", "ssv state 0", img});
  ASSERT_EQ(dirty.exit_code, 0) << dirty.err;
  ASSERT_NE(testing::e2fs_tool({"e2fsck", "-n", img}).out.find("not clean"), std::string::npos);
  auto r = run({"exec", "--overlay", img, image, "sh", "-c", "echo after > /after"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("was not unmounted cleanly: checking it with e2fsck"), std::string::npos) << r.err;
  auto fsck = testing::e2fs_tool({"e2fsck", "-fn", img});
  EXPECT_EQ(fsck.exit_code, 0) << fsck.out << fsck.err;
  EXPECT_EQ(testing::ext3_file(img, "/upper/after"), "after\n");
}

TEST_F(OverlayIntegrity, AFullOverlayIsNoSpaceInsideAndStaysUsable) {
  auto full = run(
      {"exec", "--overlay", img, image, "sh", "-c", "dd if=/dev/zero of=/big bs=1M count=100 2>&1; echo status=$?"});
  EXPECT_EQ(full.exit_code, 0) << full.err;
  EXPECT_NE(full.out.find("No space left on device"), std::string::npos) << full.out;
  EXPECT_NE(full.out.find("status=1"), std::string::npos) << full.out;
  auto next = run({"exec", "--overlay", img, image, "sh", "-c", "rm /big && echo small > /small && cat /small"});
  EXPECT_EQ(next.exit_code, 0) << next.err;
  EXPECT_EQ(next.out, "small\n");
  auto fsck = testing::e2fs_tool({"e2fsck", "-fn", img});
  EXPECT_EQ(fsck.exit_code, 0) << fsck.out << fsck.err;
}

}  // namespace
}  // namespace capsa::runtime
