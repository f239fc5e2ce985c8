// What a container sees of the host by default (issue 4 item 3), checked from inside:
// host /proc, /sys and /dev (device nodes, a shared /dev/shm), /tmp, /var/tmp, $HOME, the
// working directory, /etc/hosts, /etc/localtime, /etc/resolv.conf, generated
// /etc/passwd and /etc/group, the host's network, IPC and PID namespaces, the caller's
// uid/gid, and a read-only, nosuid, nodev image. Runs as root and as the test user.
#include <gtest/gtest.h>
#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "runtime/run_support.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"
#include "support/test_env.hpp"

namespace capsa::runtime {
namespace {

using testing::busybox_sif;
using testing::capsa;
using testing::lines_of;

std::string unique_name(const std::string& what) {
  return "capsa-fsview-" + what + "-" + std::to_string(::getpid()) + "-" + std::to_string(::getuid());
}

TEST(FilesystemView, HostProcSysAndDevicesAreVisible) {
  auto result = capsa({"exec", busybox_sif(), "sh", "-c",
                       "cat /proc/sys/kernel/random/boot_id /sys/devices/system/cpu/possible;"
                       " stat -c '%F %t:%T' /dev/null /dev/zero; head -c 3 /dev/zero | od -An -tx1"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.out, test::read_file("/proc/sys/kernel/random/boot_id") + test::read_file("/sys/devices/system/cpu/possible") +
                            "character special file 1:3\ncharacter special file 1:5\n 00 00 00\n");
}

TEST(FilesystemView, DevShmIsSharedWithTheHost) {
  std::string from_host = "/dev/shm/" + unique_name("host"), from_container = "/dev/shm/" + unique_name("ctr");
  std::ofstream(from_host) << "written on the host\n";
  auto result = capsa({"exec", busybox_sif(), "sh", "-c", "cat " + from_host + "; echo made inside > " + from_container});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.out, "written on the host\n");
  EXPECT_EQ(test::read_file(from_container), "made inside\n");
  std::filesystem::remove(from_host);
  std::filesystem::remove(from_container);
}

TEST(FilesystemView, TmpAndVarTmpAreTheHosts) {
  test::TempDir dir;  // under the host's /tmp
  dir.write("seen", "host tmp\n");
  std::string var_tmp_file = "/var/tmp/" + unique_name("vartmp");
  auto result = capsa({"exec", busybox_sif(), "sh", "-c",
                       "cat " + (dir / "seen") + "; echo from container > " + var_tmp_file + "; echo x > " + (dir / "back")});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.out, "host tmp\n");
  EXPECT_EQ(test::read_file(var_tmp_file), "from container\n");
  EXPECT_EQ(test::read_file(dir / "back"), "x\n");
  std::filesystem::remove(var_tmp_file);
}

TEST(FilesystemView, HomeIsTheCallersAndWritable) {
  testing::HomeDir home;  // in the real home: not under /tmp, which is bound anyway
  auto result = capsa({"exec", busybox_sif(), "sh", "-c", "echo \"$HOME\"; cat ~/marker; echo saved > ~/out"},
                      {"HOME=" + home.path()});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.out, home.path() + "\nhost home\n");
  EXPECT_EQ(test::read_file(home.path() + "/out"), "saved\n");
}

TEST(FilesystemView, TheWorkingDirectoryIsBoundAndEntered) {
  // The test binary's folder in the build tree: no other default bind shows it.
  std::string dir = testing::test_binary_directory();
  auto result = capsa({"exec", busybox_sif(), "sh", "-c", "pwd; cat CTestTestfile.cmake"}, {}, "", dir);
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.out, dir + "\n" + test::read_file(dir + "/CTestTestfile.cmake"));
}

TEST(FilesystemView, HostsLocaltimeAndResolvConfAreTheHosts) {
  for (const std::string file : {"/etc/hosts", "/etc/localtime", "/etc/resolv.conf"}) {
    if (!std::filesystem::exists(file)) continue;  // only what the host has is bound
    auto inside = capsa({"exec", busybox_sif(), "md5sum", file});
    auto outside = test::run_process({"md5sum", file});
    EXPECT_EQ(inside.exit_code, 0) << inside.err;
    EXPECT_EQ(inside.out, outside.out) << file;
  }
  // The busybox image has no /etc/localtime and no /etc/resolv.conf: they are created.
  auto present = capsa({"exec", busybox_sif(), "sh", "-c", "test -s /etc/hosts && test -s /etc/resolv.conf && echo ok"});
  EXPECT_EQ(present.out, "ok\n") << present.err;
}

TEST(FilesystemView, PasswdAndGroupHoldTheImagesEntriesAndTheCaller) {
  test::TempDir dir;
  std::string sif = testing::make_image(
      dir, "accounts",
      {{"/etc/passwd", "root:x:0:0:root:/root:/bin/sh\nimageuser:x:4242:4242:From the image:/home/iu:/bin/sh\n"},
       {"/etc/group", "root:x:0:\nimagegroup:x:4242:\n"}});
  auto result = capsa({"exec", sif, "sh", "-c", "cat /etc/passwd; echo --; cat /etc/group; echo --; id -un; id -gn"},
                      {"HOME=" + dir.path()});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  std::string me = test::run_process({"id", "-un"}).out, my_group = test::run_process({"id", "-gn"}).out;
  me.pop_back();
  my_group.pop_back();
  std::string uid = std::to_string(::getuid()), gid = std::to_string(::getgid());
  auto lines = lines_of(result.out);
  std::vector<std::string> passwd, group;
  {
    auto it = lines.begin();
    for (; it != lines.end() && *it != "--"; ++it) passwd.push_back(*it);
    for (++it; it < lines.end() && *it != "--"; ++it) group.push_back(*it);
  }
  auto find = [](const std::vector<std::string>& in, const std::string& prefix) -> std::string {
    for (const auto& l : in)
      if (l.rfind(prefix, 0) == 0) return l;
    return "";
  };
  EXPECT_EQ(find(passwd, "imageuser:"), "imageuser:x:4242:4242:From the image:/home/iu:/bin/sh") << result.out;
  EXPECT_EQ(find(group, "imagegroup:"), "imagegroup:x:4242:") << result.out;
  // The caller: name, uid, gid and the home as seen inside (an image entry with the
  // caller's uid, root's for root, is replaced).
  std::string mine = find(passwd, me + ":x:" + uid + ":" + gid + ":");
  EXPECT_NE(mine.find(":" + dir.path() + ":"), std::string::npos) << result.out;
  int entries_with_my_uid = 0;
  for (const auto& l : passwd)
    if (l.find(":x:" + uid + ":") != std::string::npos) ++entries_with_my_uid;
  EXPECT_EQ(entries_with_my_uid, 1) << result.out;
  // One line per group of the caller, naming them as a member (Apptainer's group.go).
  EXPECT_NE(std::find(group.begin(), group.end(), my_group + ":x:" + gid + ":" + me), group.end()) << result.out;
  ASSERT_GE(lines.size(), 2u);
  EXPECT_EQ(lines[lines.size() - 2], me);
  EXPECT_EQ(lines.back(), my_group);
}

TEST(FilesystemView, AnImageEntryWithTheCallersUidIsRewrittenInPlace) {
  test::TempDir dir;
  std::string uid = std::to_string(::getuid());
  std::string sif = testing::make_image(
      dir, "same-uid",
      {{"/etc/passwd", "first:x:4000:4000::/:/bin/sh\nimagename:x:" + uid + ":4242:Image Gecos:/home/x:/bin/imagesh\n"
                       "last:x:4001:4001::/:/bin/sh\n"}});
  auto result = capsa({"exec", sif, "cat", "/etc/passwd"}, {"HOME=" + dir.path()});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  std::string me = test::run_process({"id", "-un"}).out;
  me.pop_back();
  passwd* pw = ::getpwuid(::getuid());
  ASSERT_NE(pw, nullptr);
  // The caller's name and gecos (root keeps the image's), the image's gid and shell, the
  // home as seen inside; in place.
  std::string rewritten = ::getuid() == 0 ? "imagename:x:0:4242:Image Gecos:" + dir.path() + ":/bin/imagesh"
                                          : me + ":x:" + uid + ":4242:" + pw->pw_gecos + ":" + dir.path() + ":/bin/imagesh";
  EXPECT_EQ(result.out, "first:x:4000:4000::/:/bin/sh\n" + rewritten + "\nlast:x:4001:4001::/:/bin/sh\n");
}

TEST(FilesystemView, NetworkIpcAndPidNamespacesAreTheHosts) {
  auto result = capsa({"exec", busybox_sif(), "sh", "-c", "for ns in net ipc pid mnt; do readlink /proc/self/ns/$ns; done"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  auto lines = lines_of(result.out);
  ASSERT_EQ(lines.size(), 4u) << result.out;
  EXPECT_EQ(lines[0], testing::own_namespace("net"));
  EXPECT_EQ(lines[1], testing::own_namespace("ipc"));
  EXPECT_EQ(lines[2], testing::own_namespace("pid"));
  EXPECT_NE(lines[3], testing::own_namespace("mnt")) << "the container has its own mount namespace";
}

TEST(FilesystemView, UidAndGidAreTheCallers) {
  auto result = capsa({"exec", busybox_sif(), "sh", "-c", "id -u; id -g; cat /proc/self/uid_map | tr -s ' ' | sed 's/^ //'"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  std::string uid = std::to_string(::getuid()), gid = std::to_string(::getgid());
  // Root runs in the host's user namespace; anyone else in one that maps only themselves.
  std::string map = ::getuid() == 0 ? "0 0 4294967295" : uid + " " + uid + " 1";
  EXPECT_EQ(result.out, uid + "\n" + gid + "\n" + map + "\n");
}

// Fields of the /proc/self/mountinfo line whose mount point is `target`.
std::vector<std::string> mountinfo_fields(const std::string& mountinfo, const std::string& target) {
  for (const auto& line : lines_of(mountinfo)) {
    std::vector<std::string> fields;
    std::istringstream in(line);
    for (std::string f; in >> f;) fields.push_back(f);
    if (fields.size() > 4 && fields[4] == target) return fields;
  }
  return {};
}

bool has_option(const std::string& options, const std::string& option) {
  return ("," + options + ",").find("," + option + ",") != std::string::npos;
}

TEST(FilesystemView, TheImageIsReadOnlyNosuidNodev) {
  auto result = capsa({"exec", busybox_sif(), "cat", "/proc/self/mountinfo"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  auto root = mountinfo_fields(result.out, "/");
  ASSERT_GT(root.size(), 5u) << result.out;
  EXPECT_TRUE(has_option(root[5], "ro")) << root[5];
  EXPECT_TRUE(has_option(root[5], "nosuid")) << root[5];
  EXPECT_TRUE(has_option(root[5], "nodev")) << root[5];
  // The squashfs mount below the overlay stays out of the container's view.
  EXPECT_EQ(result.out.find(" - squashfs "), std::string::npos) << result.out;
  EXPECT_EQ(result.out.find(" - fuse.squashfuse "), std::string::npos) << result.out;
  auto write = capsa({"exec", busybox_sif(), "sh", "-c", "echo x > /bin/new 2>/dev/null && echo WROTE || echo REFUSED"});
  EXPECT_EQ(write.out, "REFUSED\n");
}

}  // namespace
}  // namespace capsa::runtime
