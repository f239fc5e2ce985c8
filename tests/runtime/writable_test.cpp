// --writable (APPTAINER_WRITABLE): a sandbox directory runs read-write and writes land in
// it; a SIF without a writable overlay partition is refused in one line; --writable-tmpfs
// gives way to it, as in Apptainer. Runs as root and as the unprivileged test user, who
// writes where the host lets them and nowhere else.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "runtime/run_support.hpp"
#include "support/test_env.hpp"

namespace capsa::runtime {
namespace {

using testing::capsa;

class Writable : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(::chdir(dir.path().c_str()), 0); }  // under /tmp: no cwd bind
  void TearDown() override { ASSERT_EQ(::chdir("/"), 0); }
  test::TempDir dir;
  std::string sandbox = testing::make_busybox_sandbox(dir);
};

TEST_F(Writable, WritesLandInTheSandboxDirectory) {
  std::string before = testing::mount_table();
  auto r = capsa({"exec", "--writable", sandbox, "sh", "-c", "echo inside > /made-inside && mkdir /opt && echo ok"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "ok\n");
  EXPECT_EQ(test::read_file(sandbox + "/made-inside"), "inside\n");
  struct stat st {};
  EXPECT_EQ(::stat((sandbox + "/opt").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, ::getuid()) << "files are made as the caller";
  EXPECT_EQ(testing::mount_table(), before);
}

TEST_F(Writable, WithoutTheFlagTheSandboxIsReadOnly) {
  auto r = capsa({"exec", sandbox, "sh", "-c", "touch /made 2>/dev/null && echo WROTE || echo REFUSED"});
  EXPECT_EQ(r.out, "REFUSED\n") << r.err;
  EXPECT_NE(::access((sandbox + "/made").c_str(), F_OK), 0);
}

TEST_F(Writable, OnlyWhereTheHostLetsTheCallerWrite) {
  ASSERT_EQ(::mkdir((sandbox + "/locked").c_str(), 0555), 0);
  auto r = capsa({"exec", "--writable", sandbox, "sh", "-c", "touch /locked/f 2>/dev/null && echo WROTE || echo REFUSED"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  // Root may write anywhere (as on the host); anyone else only where their permissions allow.
  EXPECT_EQ(r.out, ::geteuid() == 0 ? "WROTE\n" : "REFUSED\n");
  ::chmod((sandbox + "/locked").c_str(), 0755);
}

TEST_F(Writable, TheEnvironmentVariablesActLikeTheFlag) {
  for (const char* var : {"APPTAINER_WRITABLE=1", "SINGULARITY_WRITABLE=true"}) {
    auto r = capsa({"exec", sandbox, "sh", "-c", "echo x > /from-env && echo ok"}, {var});
    EXPECT_EQ(r.out, "ok\n") << var << ": " << r.err;
    EXPECT_EQ(::unlink((sandbox + "/from-env").c_str()), 0) << var;
  }
}

TEST_F(Writable, ItWinsOverWritableTmpfsWithAWarning) {
  auto r = capsa({"exec", "--writable", "--writable-tmpfs", sandbox, "sh", "-c", "echo kept > /kept"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "WARNING: Disabling --writable-tmpfs flag, mutually exclusive with --writable\n");
  EXPECT_EQ(test::read_file(sandbox + "/kept"), "kept\n");
}

TEST_F(Writable, ASifWithoutAnOverlayPartitionIsRefusedInOneLine) {
  std::string before = testing::mount_table();
  auto r = capsa({"exec", "--writable", testing::busybox_sif(), "true"});
  EXPECT_EQ(r.exit_code, 1);
  std::string resolved = std::filesystem::canonical(testing::busybox_sif());  // capsa names the real path
  EXPECT_EQ(r.err, "capsa: error: " + resolved +
                       ": --writable needs a writable overlay partition and this SIF has none (add one with `capsa "
                       "overlay create " +
                       resolved +
                       "`, or use --writable-tmpfs for a temporary writable layer "
                       "discarded at exit, or a sandbox directory)\n");
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(testing::mount_table(), before);
}

TEST_F(Writable, ASifOverlayPartitionWithoutApptainersLayoutGetsItWhereTheCallerMayWrite) {
  // The busybox image plus a bare ext3 overlay partition (no upper/ or work/, its root
  // directory root's): Apptainer makes the two directories when it can, and so does capsa.
  std::string image = dir / "with-overlay.sif", ext3 = dir / "overlay.img";
  ASSERT_EQ(test::run_process({"cp", testing::busybox_sif(), image}).exit_code, 0);
  ASSERT_EQ(::chmod(image.c_str(), 0644), 0);  // the fixture is read-only
  ASSERT_EQ(test::run_process({"truncate", "-s", "1M", ext3}).exit_code, 0);
  ASSERT_EQ(test::run_process({"/usr/sbin/mkfs.ext3", "-q", "-F", ext3}).exit_code, 0);
  auto added = capsa({"sif", "add", "--datatype", "4", "--parttype", "4", "--partfs", "2", "--partarch", "2", image, ext3});
  ASSERT_EQ(added.exit_code, 0) << added.err;
  std::string before = testing::mount_table();
  auto r = capsa({"exec", "--writable", image, "sh", "-c", "echo x > /x && echo ok"});
  if (::geteuid() == 0) {
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, "ok\n");
    EXPECT_EQ(capsa({"exec", image, "cat", "/x"}).out, "x\n");
  } else {
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_EQ(r.err,
              "capsa: error: overlay " + image + ": cannot use upper in it as the writable layer: Permission denied\n");
  }
  EXPECT_EQ(testing::mount_table(), before);
}

TEST_F(Writable, AMissingBindDestinationIsAnErrorNotCreatedInTheImage) {
  std::string before = testing::mount_table();
  auto r = capsa({"exec", "--writable", "-B", dir.path() + ":/not-there", sandbox, "true"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "capsa: error: /not-there does not exist in the image, and --writable cannot create mount points "
                   "(create it in the sandbox, or run without --writable)\n");
  EXPECT_NE(::access((sandbox + "/not-there").c_str(), F_OK), 0) << "nothing was created in the sandbox";
  EXPECT_EQ(testing::mount_table(), before);
}

TEST_F(Writable, AMissingSystemMountPointIsSkippedWithAWarning) {
  ASSERT_EQ(::rmdir((sandbox + "/sys").c_str()), 0);
  auto r = capsa({"exec", "--writable", sandbox, "sh", "-c", "test -e /sys && echo THERE || echo ABSENT"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "ABSENT\n");
  EXPECT_EQ(r.err, "WARNING: skipping the mount on /sys: it does not exist in the image (--writable cannot create it)\n");
}

}  // namespace
}  // namespace capsa::runtime
