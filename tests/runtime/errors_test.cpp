// Bad input ends in one clear line (what, and what to do), a non-zero exit, and nothing
// left behind: no mount in the caller's namespace, no loop device, no FUSE server.
// (Image missing, not a SIF, not squashfs: launch_test.cpp BadImagesGiveOneClearLine.)
#include <gtest/gtest.h>
#include <unistd.h>

#include <sys/stat.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>

#include "runtime/run_support.hpp"
#include "support/test_env.hpp"
#include "support/unprivileged.hpp"

namespace capsa::runtime {
namespace {

using testing::capsa;

// Nothing of a failed start is left: mounts, loop devices, FUSE servers.
void expect_nothing_left(const std::string& mounts_before, const std::string& image) {
  EXPECT_EQ(testing::mount_table(), mounts_before);
  for (int i = 0; i < 50 && testing::fuse_servers_for(image) > 0; ++i) ::usleep(100000);
  EXPECT_EQ(testing::fuse_servers_for(image), 0);
  for (int i = 0; i < 50 && testing::loop_devices_for(image) > 0; ++i) ::usleep(100000);
  EXPECT_EQ(testing::loop_devices_for(image), 0);
}

bool one_line(const std::string& text) { return !text.empty() && text.find('\n') == text.size() - 1; }

class Errors : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(::chdir("/"), 0);
    // A private copy, so that leaks can be told apart from other suites' containers.
    ASSERT_EQ(test::run_process({"cp", testing::busybox_sif(), image}).exit_code, 0);
    // Readable by the test user, whom the .root run switches to for the unprivileged cases.
    ASSERT_EQ(::chmod(dir.path().c_str(), 0755), 0);
    ASSERT_EQ(::chmod(image.c_str(), 0644), 0);
  }
  test::TempDir dir;
  std::string image = dir / "errors.sif";
};

TEST_F(Errors, CommandNotFoundIs127WithApptainersWords) {
  std::string before = testing::mount_table();
  auto r = capsa({"exec", image, "no-such-command", "arg"});
  EXPECT_EQ(r.exit_code, 127);
  EXPECT_EQ(r.err, "capsa: error: \"no-such-command\": executable file not found in $PATH\n");
  EXPECT_EQ(r.out, "");
  auto path = capsa({"exec", image, "/no/such/program"});
  EXPECT_EQ(path.exit_code, 127);
  EXPECT_EQ(path.err, "capsa: error: \"/no/such/program\": no such file or directory\n");
  expect_nothing_left(before, image);
}

TEST_F(Errors, TheProgramNameIsTheOneCalled) {
  std::string link = dir / "singularity";
  ASSERT_EQ(::symlink(test::capsa_binary().c_str(), link.c_str()), 0);
  auto r = test::run_process({link, "exec", image, "no-such-command"}, "", 60);
  EXPECT_EQ(r.exit_code, 127);
  EXPECT_EQ(r.err, "singularity: error: \"no-such-command\": executable file not found in $PATH\n");
}

TEST_F(Errors, BindSourceMissing) {
  std::string before = testing::mount_table();
  auto r = capsa({"exec", "-B", dir / "absent:/data", image, "true"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "capsa: error: bind source " + dir / "absent" +
                       " does not exist on the host (check the path given to -B/--bind)\n");
  expect_nothing_left(before, image);
}

TEST_F(Errors, BindOfAFileOntoADirectoryAndBack) {
  std::string before = testing::mount_table();
  std::string file = dir.write("file.txt", "x");
  auto onto_dir = capsa({"exec", "-B", file + ":/etc", image, "true"});
  EXPECT_EQ(onto_dir.exit_code, 1);
  EXPECT_EQ(onto_dir.err, "capsa: error: binding " + file + " to /etc: " + file +
                              " is a file but /etc is a directory in the container (give a destination of the same "
                              "kind, or one that does not exist in the image)\n");
  auto onto_file = capsa({"exec", "-B", dir.path() + ":/etc/group", image, "true"});
  EXPECT_EQ(onto_file.exit_code, 1);
  EXPECT_EQ(onto_file.err, "capsa: error: binding " + dir.path() + " to /etc/group: " + dir.path() +
                               " is a directory but /etc/group is a file in the container (give a destination of the "
                               "same kind, or one that does not exist in the image)\n");
  expect_nothing_left(before, image);
}

// Overwrites `length` bytes at `offset` of the image's squashfs partition.
void damage(const std::string& image, std::uint64_t offset, std::uint64_t length, char byte) {
  std::fstream f(image, std::ios::in | std::ios::out | std::ios::binary);
  f.seekp(static_cast<std::streamoff>(offset));
  std::string junk(length, byte);
  f.write(junk.data(), static_cast<std::streamsize>(junk.size()));
}

// Where the squashfs magic "hsqs" is in the file (the primary partition's start).
std::uint64_t squashfs_start(const std::string& image) {
  std::string bytes = test::read_file(image);
  auto at = bytes.find("hsqs");
  return at == std::string::npos ? 0 : at;
}

TEST_F(Errors, CorruptSquashfs) {
  std::uint64_t start = squashfs_start(image);
  ASSERT_GT(start, 0u);
  std::string superblock = test::read_file(image).substr(start, 96);
  auto field = [&](int at) {
    std::uint64_t v = 0;
    for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(superblock[at + i]);
    return v;
  };
  std::uint64_t inode_table = field(64), directory_table = field(72);
  ASSERT_LT(inode_table, directory_table);
  // The tables the root directory is read from, overwritten: the super block still looks fine.
  damage(image, start + inode_table, directory_table - inode_table + 64, '\xff');
  std::string before = testing::mount_table();
  auto r = capsa({"exec", image, "true"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(one_line(r.err)) << r.err;
  EXPECT_EQ(r.err.rfind("capsa: error: " + image + ": primary partition: ", 0), 0u) << r.err;
  EXPECT_NE(r.err.find("(the image is damaged or incomplete: copy, pull or build it again)"), std::string::npos) << r.err;
  expect_nothing_left(before, image);

  // A damaged super block says so too.
  damage(image, start + 28, 4, '\x7f');  // version
  auto version = capsa({"exec", image, "true"});
  EXPECT_EQ(version.exit_code, 1);
  EXPECT_TRUE(one_line(version.err)) << version.err;
  EXPECT_NE(version.err.find("damaged"), std::string::npos) << version.err;
}

// Runs `body` as the unprivileged test user: directly in the .user run, dropped to it in
// the .root run.
void as_unprivileged(const std::function<bool()>& body) {
  if (::geteuid() != 0) {
    EXPECT_TRUE(body());
    return;
  }
  if (!test::test_user()) GTEST_SKIP() << "no test user";
  EXPECT_EQ(test::run_as_test_user(body), 0);
}

TEST_F(Errors, SquashfuseMissingFromPath) {
  as_unprivileged([&] {
    std::string before = testing::mount_table();
    auto r = capsa({"exec", image, "true"}, {"PATH=/nonexistent", "CAPSA_FUSE=squashfuse"});
    bool ok = r.exit_code == 1 &&
              r.err == "capsa: error: squashfuse_ll was not found on PATH (CAPSA_FUSE=squashfuse mounts images with "
                       "it: install the squashfuse package, or unset CAPSA_FUSE for capsa's own server)\n" &&
              testing::mount_table() == before;
    if (!ok) std::fprintf(stderr, "exit %d: %s\n", r.exit_code, r.err.c_str());
    return ok;
  });
}

// Without a usable /dev/fuse (root's alone on some machines), an unprivileged container
// runs from a temporary sandbox, as Apptainer's does, says so in one line, and leaves
// neither the sandbox nor a mount behind.
TEST_F(Errors, DevFuseUnusableRunsFromATemporarySandbox) {
  if (::geteuid() != 0) GTEST_SKIP() << "replacing /dev/fuse in a private mount namespace needs root";
  auto user = test::test_user();
  if (!user) GTEST_SKIP() << "no test user";
  std::string blocker = dir.write("no-fuse", "");
  ASSERT_EQ(::chmod(blocker.c_str(), 0), 0);
  std::string tmp = dir / "tmp";
  ASSERT_EQ(::mkdir(tmp.c_str(), 0777), 0);
  ASSERT_EQ(::chmod(tmp.c_str(), 0777), 0);
  std::string before = testing::mount_table();
  // In a private mount namespace /dev/fuse is an unopenable file; capsa runs as the test user there.
  auto r = test::run_process({"unshare", "-m", "sh", "-c",
                              "mount --bind \"$1\" /dev/fuse && exec setpriv --reuid=\"$2\" --regid=\"$2\" "
                              "--init-groups env TMPDIR=\"$5\" \"$3\" exec \"$4\" sh -c 'id -u; echo inside'",
                              "sh", blocker, user->name, test::capsa_binary(), image, tmp},
                             "", 60);
  if (const char* kernel = std::getenv("CAPSA_TEST_KERNEL"); kernel != nullptr && std::string(kernel) == "4.18") {
    // No kernel overlayfs unprivileged before 5.11, and no FUSE for fuse-overlayfs: no root to build.
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("capsa: error: this kernel refuses overlayfs in a user namespace (Linux 5.11 allows it), "
                         "and fuse-overlayfs could not mount"),
              std::string::npos)
        << r.err;
    EXPECT_TRUE(std::filesystem::is_empty(tmp)) << "the temporary sandbox is removed";
    expect_nothing_left(before, image);
    return;
  }
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.substr(0, r.out.find('\n')), std::to_string(user->uid));
  EXPECT_NE(r.out.find("\ninside\n"), std::string::npos) << r.out;
  EXPECT_EQ(r.err, "INFO:    unpacking " + image +
                       " into a temporary sandbox: no FUSE to mount it with (/dev/fuse: Permission denied)\n");
  EXPECT_TRUE(std::filesystem::is_empty(tmp)) << "the temporary sandbox is removed";
  expect_nothing_left(before, image);
}

// Root on a machine without loop devices: /dev/loop-control answers no loop ioctl (it is
// /dev/null in a private mount namespace). squashfuse_ll serves the image here, so that
// ps can tell the fallback happened and PATH can take it away.
test::ProcessResult capsa_without_loop_devices(const std::string& path, const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"unshare", "-m", "sh", "-c",
                                   "mount --bind /dev/null /dev/loop-control && PATH=\"$0\" CAPSA_FUSE=squashfuse exec \"$@\"", path,
                                   test::capsa_binary()};
  argv.insert(argv.end(), args.begin(), args.end());
  return test::run_process(argv, "", 60);
}

TEST_F(Errors, RootWithoutLoopDevicesUsesFuse) {
  if (::geteuid() != 0) GTEST_SKIP() << "loop devices are root's";
  std::string before = testing::mount_table();
  auto r = capsa_without_loop_devices(std::getenv("PATH"), {"exec", image, "sh", "-c",
                                                            "ps -o args | grep -c '^[s]quashfuse_ll.*" + image + "'"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "1\n") << "the image is served by squashfuse_ll";
  EXPECT_EQ(r.err, "");
  expect_nothing_left(before, image);
}

TEST_F(Errors, NeitherLoopDevicesNorFuse) {
  if (::geteuid() != 0) GTEST_SKIP() << "loop devices are root's";
  std::string before = testing::mount_table();
  auto r = capsa_without_loop_devices("/nonexistent", {"exec", image, "true"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "capsa: error: no way to mount the image: no loop device (asking /dev/loop-control for a free loop "
                   "device: Inappropriate ioctl for device), and FUSE failed too: squashfuse_ll was not found on "
                   "PATH (CAPSA_FUSE=squashfuse mounts images with it: install the squashfuse package, or unset "
                   "CAPSA_FUSE for capsa's own server)\n");
  expect_nothing_left(before, image);
}

TEST_F(Errors, UserNamespacesDisabled) {
  // Inside a user namespace of its own where max_user_namespaces is 0 (the limit is per
  // namespace), the test user is refused a user namespace as on a machine that disables them.
  as_unprivileged([&] {
    auto r = test::run_process({"unshare", "--map-current-user", "--keep-caps", "sh", "-c",
                                "echo 0 > /proc/sys/user/max_user_namespaces && exec \"$0\" exec \"$1\" true",
                                test::capsa_binary(), image},
                               "", 60);
    bool ok = r.exit_code == 1 &&
              r.err == "capsa: error: cannot create a user namespace: user namespaces are disabled on this machine "
                       "(/proc/sys/user/max_user_namespaces is 0): No space left on device (unprivileged containers "
                       "need them: ask the administrator to enable user namespaces, or run as root)\n";
    if (!ok) std::fprintf(stderr, "exit %d: %s\n", r.exit_code, r.err.c_str());
    return ok;
  });
}

}  // namespace
}  // namespace capsa::runtime
