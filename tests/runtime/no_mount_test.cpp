// --no-mount LIST (APPTAINER_NO_MOUNT): each of Apptainer's values leaves its system
// mount out, as the process inside sees it (its own /proc/self/mountinfo, or the files).
// Runs as root and as the unprivileged test user.
#include <gtest/gtest.h>
#include <unistd.h>

#include "runtime/run_support.hpp"

namespace capsa::runtime {
namespace {

using testing::capsa;

// The mount points inside the container, one per line.
const char* kMountPoints = "awk '{print $5}' /proc/self/mountinfo";

class NoMount : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(::chdir("/"), 0); }  // no working-directory bind unless a test wants one
  std::string image = testing::busybox_sif();

  // The mount points seen with `flags` before IMAGE.
  std::string mount_points(std::vector<std::string> flags, const std::vector<std::string>& env = {}) {
    std::vector<std::string> args = {"exec"};
    args.insert(args.end(), flags.begin(), flags.end());
    args.insert(args.end(), {image, "sh", "-c", kMountPoints});
    auto r = capsa(args, env);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.out;
  }
  std::string run(std::vector<std::string> flags, const std::string& script) {
    std::vector<std::string> args = {"exec"};
    args.insert(args.end(), flags.begin(), flags.end());
    args.insert(args.end(), {image, "sh", "-c", script});
    auto r = capsa(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.out;
  }
};

TEST_F(NoMount, Proc) {
  EXPECT_EQ(run({}, "test -e /proc/self/status && echo THERE || echo ABSENT"), "THERE\n");
  EXPECT_EQ(run({"--no-mount", "proc"}, "test -e /proc/self/status && echo THERE || echo ABSENT"), "ABSENT\n");
}

TEST_F(NoMount, Sys) {
  EXPECT_TRUE(testing::has_line(mount_points({}), "/sys"));
  EXPECT_FALSE(testing::has_line(mount_points({"--no-mount", "sys"}), "/sys"));
  EXPECT_EQ(run({"--no-mount", "sys"}, "test -e /sys/kernel && echo THERE || echo ABSENT"), "ABSENT\n");
}

TEST_F(NoMount, Dev) {
  for (std::vector<std::string> flags : {std::vector<std::string>{}, {"--contain"}}) {
    flags.insert(flags.end(), {"--no-mount", "dev"});
    auto points = mount_points(flags);
    EXPECT_FALSE(testing::has_line(points, "/dev"));
    EXPECT_FALSE(testing::has_line(points, "/dev/pts"));
    EXPECT_EQ(run(flags, "test -e /dev/null && echo THERE || echo ABSENT"), "ABSENT\n");
  }
}

TEST_F(NoMount, DevptsLeavesOutTheMinimalDevsPtsOnly) {
  EXPECT_TRUE(testing::has_line(mount_points({"--contain"}), "/dev/pts"));
  EXPECT_FALSE(testing::has_line(mount_points({"--contain", "--no-mount", "devpts"}), "/dev/pts"));
  // The full /dev is the host's, /dev/pts included, as in Apptainer.
  EXPECT_EQ(run({"--no-mount", "devpts"}, "test -e /dev/pts/ptmx && echo THERE || echo ABSENT"), "THERE\n");
}

TEST_F(NoMount, Tmp) {
  test::TempDir dir;  // under the host's /tmp
  dir.write("marker", "x");
  std::string probe = "test -e " + dir.path() + "/marker && echo THERE || echo ABSENT";
  EXPECT_EQ(run({}, probe), "THERE\n");
  EXPECT_EQ(run({"--no-mount", "tmp"}, probe), "ABSENT\n");
  auto points = mount_points({"--no-mount", "tmp"});
  EXPECT_FALSE(testing::has_line(points, "/tmp"));
  EXPECT_FALSE(testing::has_line(points, "/var/tmp"));
}

TEST_F(NoMount, Home) {
  test::TempDir dir;
  dir.write("marker", "x");
  std::vector<std::string> home = {"--home", dir.path() + ":/custom-home"};
  EXPECT_EQ(run(home, "test -e /custom-home/marker && echo THERE || echo ABSENT"), "THERE\n");
  std::vector<std::string> off = home;
  off.insert(off.end(), {"--no-mount", "home"});
  EXPECT_EQ(run(off, "test -e /custom-home/marker && echo THERE || echo ABSENT"), "ABSENT\n");
  EXPECT_FALSE(testing::has_line(mount_points(off), "/custom-home"));
}

TEST_F(NoMount, Cwd) {
  // A working directory no other mount shows: a fresh one beside the test binary's.
  char buf[4096];
  ASSERT_NE(::getcwd(buf, sizeof buf), nullptr);
  test::TempDir dir;
  std::string cwd = dir.path();
  ASSERT_EQ(::chdir(cwd.c_str()), 0);
  // Under /tmp it is visible through the /tmp bind anyway; with /tmp left out only the
  // working-directory bind can show it.
  auto shown = capsa({"exec", "--no-mount", "tmp", image, "pwd"});
  EXPECT_EQ(shown.out, cwd + "\n") << shown.err;
  auto hidden = capsa({"exec", "--no-mount", "tmp,cwd", image, "pwd"});
  EXPECT_NE(hidden.out, cwd + "\n");
  EXPECT_NE(hidden.err.find("WARNING: " + cwd + " does not exist in the container"), std::string::npos) << hidden.err;
  ASSERT_EQ(::chdir("/"), 0);
}

TEST_F(NoMount, HostfsIsAcceptedAndChangesNothing) {
  auto r = capsa({"exec", "--no-mount", "hostfs", image, "true"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.err, "");
}

TEST_F(NoMount, BindPathsLeavesOutHostsLocaltimeAndResolvConf) {
  for (std::vector<std::string> flags : {std::vector<std::string>{}, {"--contain"}}) {
    auto all = mount_points(flags);
    EXPECT_TRUE(testing::has_line(all, "/etc/hosts"));
    EXPECT_TRUE(testing::has_line(all, "/etc/resolv.conf"));
    flags.insert(flags.end(), {"--no-mount", "bind-paths"});
    auto none = mount_points(flags);
    for (const char* file : {"/etc/hosts", "/etc/localtime", "/etc/resolv.conf"})
      EXPECT_FALSE(testing::has_line(none, file)) << file;
  }
}

TEST_F(NoMount, OneBindPathByItsDestination) {
  for (const std::string file : {"/etc/hosts", "/etc/resolv.conf"}) {
    auto points = mount_points({"--no-mount", file});
    EXPECT_FALSE(testing::has_line(points, file)) << file;
    std::string other = file == "/etc/hosts" ? "/etc/resolv.conf" : "/etc/hosts";
    EXPECT_TRUE(testing::has_line(points, other)) << other << " stays";
  }
  if (::access("/etc/localtime", F_OK) == 0) {
    EXPECT_TRUE(testing::has_line(mount_points({}), "/etc/localtime"));
    EXPECT_FALSE(testing::has_line(mount_points({"--no-mount", "/etc/localtime"}), "/etc/localtime"));
  }
}

TEST_F(NoMount, CommaListsRepeatedFlagsAndTheEnvironment) {
  auto listed = mount_points({"--no-mount", "sys,tmp", "--no-mount", "/etc/hosts"});
  for (const char* point : {"/sys", "/tmp", "/etc/hosts"}) EXPECT_FALSE(testing::has_line(listed, point)) << point;
  for (const char* var : {"APPTAINER_NO_MOUNT=sys,tmp", "SINGULARITY_NO_MOUNT=sys,tmp"}) {
    auto from_env = mount_points({}, {var});
    EXPECT_FALSE(testing::has_line(from_env, "/sys")) << var;
    EXPECT_FALSE(testing::has_line(from_env, "/tmp")) << var;
  }
  // The flag wins over the variable.
  auto flag_wins = mount_points({"--no-mount", "tmp"}, {"APPTAINER_NO_MOUNT=sys"});
  EXPECT_TRUE(testing::has_line(flag_wins, "/sys"));
  EXPECT_FALSE(testing::has_line(flag_wins, "/tmp"));
}

TEST_F(NoMount, AnUnknownNameIsAWarning) {
  auto r = capsa({"exec", "--no-mount", "bogus", image, "true"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.err, "WARNING: Ignoring unknown mount type 'bogus'\n");
}

}  // namespace
}  // namespace capsa::runtime
