// --underlay and `enable underlay` (runtime/underlay_root.hpp): the root is a tmpfs of
// binds of the image's entries instead of an overlay, seen from inside the container
// (its /proc/self/mountinfo), as root and as the unprivileged test user.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "runtime/run_support.hpp"
#include "support/test_env.hpp"

namespace capsa::runtime {
namespace {

using testing::busybox_sif;
using testing::capsa;

struct MountLine {
  std::string point, type;
};

// /proc/self/mountinfo as the container printed it: each mount's point and type.
std::vector<MountLine> mounts_of(const std::string& mountinfo) {
  std::vector<MountLine> out;
  for (const std::string& line : testing::lines_of(mountinfo)) {
    std::istringstream fields(line);
    std::vector<std::string> words;
    for (std::string word; fields >> word;) words.push_back(word);
    auto dash = std::find(words.begin(), words.end(), "-");
    if (words.size() < 5 || dash == words.end() || dash + 1 == words.end()) continue;
    out.push_back({words[4], *(dash + 1)});
  }
  return out;
}

std::string type_at(const std::vector<MountLine>& mounts, const std::string& point) {
  std::string type;
  for (const MountLine& m : mounts)
    if (m.point == point) type = m.type;  // the last one is on top
  return type;
}

bool any_overlay(const std::vector<MountLine>& mounts) {
  return std::any_of(mounts.begin(), mounts.end(), [](const MountLine& m) {
    return m.type == "overlay" || m.type.find("overlayfs") != std::string::npos;
  });
}

class Underlay : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(::chdir(dir.path().c_str()), 0);  // under /tmp: no cwd bind
    std::filesystem::create_directories(dir / "data");
    dir.write("data/marker", "from the host\n");
  }
  void TearDown() override { ASSERT_EQ(::chdir("/"), 0); }
  test::TempDir dir;
};

TEST_F(Underlay, BindsToAPathTheImageLacksOnATmpfsRoot) {
  const std::string before = testing::mount_table();
  auto r = capsa({"exec", "--underlay", "-B", dir / "data" + ":/new/dir", busybox_sif(), "sh", "-c",
                  "cat /new/dir/marker && cat /proc/self/mountinfo"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_EQ(r.out.substr(0, 14), "from the host\n");
  const std::vector<MountLine> mounts = mounts_of(r.out.substr(14));
  EXPECT_EQ(type_at(mounts, "/"), "tmpfs") << r.out;
  EXPECT_FALSE(any_overlay(mounts)) << r.out;
  // The image's top-level directories are binds of the image (squashfs, or capsa's FUSE server).
  EXPECT_NE(type_at(mounts, "/bin"), "") << r.out;
  EXPECT_NE(type_at(mounts, "/bin"), "tmpfs") << r.out;
  EXPECT_NE(r.err.find("--underlay has been deprecated"), std::string::npos) << r.err;
  EXPECT_EQ(testing::mount_table(), before) << "nothing stays mounted";
  // Without the flag the same run gets the overlay.
  r = capsa({"exec", "-B", dir / "data" + ":/new/dir", busybox_sif(), "cat", "/proc/self/mountinfo"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(any_overlay(mounts_of(r.out))) << r.out;
}

TEST_F(Underlay, AMissingTargetBelowAnImageDirectoryKeepsItsOtherEntries) {
  auto r = capsa({"exec", "--underlay", "-B", dir / "data" + ":/etc/capsa-new", busybox_sif(), "sh", "-c",
                  "cat /etc/capsa-new/marker && grep -c '^root:' /etc/passwd && cat /proc/self/mountinfo"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_EQ(r.out.substr(0, 16), "from the host\n1\n");
  const std::vector<MountLine> mounts = mounts_of(r.out.substr(16));
  // /etc itself is made on the tmpfs; its entries are bound one by one.
  EXPECT_EQ(type_at(mounts, "/etc"), "") << r.out;
  EXPECT_NE(type_at(mounts, "/etc/group"), "") << r.out;
}

TEST_F(Underlay, TheRootIsReadOnlyAndASandboxStaysUnwritten) {
  const std::string sandbox = testing::make_busybox_sandbox(dir);
  auto r = capsa({"exec", "--underlay", sandbox, "sh", "-c",
                  "touch /made 2>/dev/null && echo ROOT; touch /etc/made 2>/dev/null && echo ETC; echo done"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "done\n");
  EXPECT_FALSE(std::filesystem::exists(sandbox + "/etc/made"));
}

TEST_F(Underlay, TheEnvironmentVariableActsLikeTheFlag) {
  auto r = capsa({"exec", "-B", dir / "data" + ":/new/dir", busybox_sif(), "cat", "/proc/self/mountinfo"},
                 {"APPTAINER_UNDERLAY=1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(type_at(mounts_of(r.out), "/"), "tmpfs") << r.out;
}

TEST_F(Underlay, PreferredInTheSiteConfigGivesItWithoutTheFlag) {
  const std::string conf = dir.write("capsa.conf", "enable underlay = preferred\n");
  auto r = capsa({"-c", conf, "exec", "-B", dir / "data" + ":/new/dir", busybox_sif(), "sh", "-c",
                  "cat /new/dir/marker; cat /proc/self/mountinfo"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(type_at(mounts_of(r.out), "/"), "tmpfs") << r.out;
  EXPECT_EQ(r.err, "");
  // A writable layer still needs the overlay, which wins.
  r = capsa(
      {"-c", conf, "exec", "--writable-tmpfs", busybox_sif(), "sh", "-c", "touch /made && cat /proc/self/mountinfo"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(any_overlay(mounts_of(r.out))) << r.out;
}

TEST_F(Underlay, DisabledBySiteRefusesTheFlagUnlessAnOverlayIsNeeded) {
  const std::string conf = dir.write("capsa.conf", "enable underlay = no\n");
  auto r = capsa({"-c", conf, "exec", "--underlay", busybox_sif(), "true"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("--underlay: not allowed by the administrator (`enable underlay = no` in " + conf),
            std::string::npos)
      << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 2) << "the deprecation, then the refusal: " << r.err;
  // As in Apptainer, --writable-tmpfs takes the overlay and the flag has nothing to refuse.
  r = capsa({"-c", conf, "exec", "--underlay", "--writable-tmpfs", busybox_sif(), "true"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

TEST_F(Underlay, AnInstanceStartedWithItHasItsRoot) {
  // Under the emulated old kernel no instance outlives its start, with or without the flag
  // (the instance suite is not run there either).
  if (std::getenv("CAPSA_TEST_KERNEL") != nullptr) GTEST_SKIP() << "no instances under capsa-old-kernel";
  const std::string name = "underlay-" + std::to_string(::getpid());
  auto r = capsa({"instance", "start", "--underlay", "-B", dir / "data" + ":/new/dir", busybox_sif(), name});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = capsa({"exec", "instance://" + name, "sh", "-c", "cat /new/dir/marker; cat /proc/self/mountinfo"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.substr(0, 14), "from the host\n");
  EXPECT_EQ(type_at(mounts_of(r.out), "/"), "tmpfs") << r.out;
  EXPECT_EQ(capsa({"instance", "stop", name}).exit_code, 0);
}

TEST_F(Underlay, OverlayDisabledBySiteFallsBackToIt) {
  const std::string conf = dir.write("capsa.conf", "enable overlay = no\n");
  auto r = capsa({"-c", conf, "exec", "-B", dir / "data" + ":/new/dir", busybox_sif(), "sh", "-c",
                  "cat /new/dir/marker; cat /proc/self/mountinfo"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.substr(0, 14), "from the host\n");
  EXPECT_EQ(type_at(mounts_of(r.out), "/"), "tmpfs") << r.out;
}

}  // namespace
}  // namespace capsa::runtime
