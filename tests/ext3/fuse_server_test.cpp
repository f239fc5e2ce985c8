// capsa's ext3 FUSE server (src/ext3) on images made by mkfs.ext3, mounted for real in a
// private mount namespace (a user namespace too, unprivileged) and driven with ordinary
// system calls: every operation the kernel's overlayfs and a container's programs use.
// Afterwards the server has written everything back: e2fsck -fn finds the file system
// clean, and debugfs (and, as root, the kernel's own ext3 driver) reads what was written.
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/fs.h>
#include <signal.h>
#include <stdio.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <set>
#include <string>

#include "ext3/fuse_server.hpp"
#include "runtime/image_mount.hpp"
#include "runtime/overlay_spec.hpp"
#include "support/namespace.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"
#include "util/error.hpp"
#include "util/fd.hpp"
#include "util/find_executable.hpp"
#include "util/log.hpp"

namespace capsa::ext3 {
namespace {

std::string tool(const std::string& name) { return find_system_program(name); }

// An ext3 file system of `mib` MiB at `offset` of `path` (1 KiB blocks: a file past 12
// blocks needs indirect blocks).
void make_ext3(const std::string& path, int mib, std::uint64_t offset = 0) {
  const std::string fs_file = offset == 0 ? path : path + ".fs";
  // The root directory the caller's, as `capsa overlay create` makes it.
  const std::string owner = "root_owner=" + std::to_string(::getuid()) + ":" + std::to_string(::getgid());
  auto made =
      test::run_process({tool("mkfs.ext3"), "-q", "-F", "-b", "1024", "-E", owner, fs_file, std::to_string(mib) + "M"});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  if (offset != 0) {
    std::ofstream out(path, std::ios::binary);
    out << std::string(offset, 'P') << std::ifstream(fs_file, std::ios::binary).rdbuf() << std::string(4096, 'Q');
    std::remove(fs_file.c_str());
  }
}

// Checks made inside the namespace child: failures are printed and counted (gtest's own
// assertions would not reach the parent).
struct Checks {
  bool ok = true;
  void expect(bool condition, const std::string& what) {
    if (condition) return;
    std::cerr << "FAILED: " << what << " (errno " << std::strerror(errno) << ")\n";
    ok = false;
  }
};

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

bool spit(const std::string& path, const std::string& data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << data;
  out.close();
  return static_cast<bool>(out);
}

// Mounts `volume` at `target` and serves it from a child process, which also watches
// `container` when given; returns the child's pid.
// The count in the server's last debugging line ("N requests answered through io_uring
// (Q queues)"); -1 without that line.
long answered_through_rings(const std::string& server_log) {
  const std::size_t answered_at = server_log.find(" requests answered through io_uring");
  if (answered_at == std::string::npos) return -1;
  const std::size_t number_at = server_log.rfind(' ', answered_at - 1) + 1;
  return std::stol(server_log.substr(number_at, answered_at - number_at));
}

// The kernel's FUSE-over-io_uring switch, turned on for its lifetime where it is off and
// this process is root (and back off afterwards). tests/ext3/with-fuse-uring does the same
// around the test user's run.
class FuseUringSwitch {
 public:
  FuseUringSwitch() {
    const std::string state = slurp(kSwitch);
    if (state.empty()) {
      why_off_ = std::string("this kernel has no FUSE over io_uring (no ") + kSwitch + ")";
    } else if (state[0] == 'Y') {
      on_ = true;
    } else if (::geteuid() != 0) {
      why_off_ = "FUSE over io_uring is off (enable_uring) and only root may turn it on";
    } else {
      turned_on_ = on_ = spit(kSwitch, "Y") && slurp(kSwitch)[0] == 'Y';
      if (!on_) why_off_ = "enable_uring could not be turned on";
    }
  }
  ~FuseUringSwitch() {
    if (turned_on_) spit(kSwitch, "N");
  }
  FuseUringSwitch(const FuseUringSwitch&) = delete;
  FuseUringSwitch& operator=(const FuseUringSwitch&) = delete;
  bool on() const { return on_; }
  const std::string& why_off() const { return why_off_; }

 private:
  static constexpr const char* kSwitch = "/sys/module/fuse/parameters/enable_uring";
  bool on_ = false, turned_on_ = false;
  std::string why_off_;
};

// With `server_log`, the server writes its messages there, debugging ones included;
// `io_uring` as for serve().
pid_t serve_in_child(Volume& volume, const std::string& target, unsigned long flags = MS_NOSUID | MS_NODEV,
                     const EndWatch* container = nullptr, const std::string& server_log = "", bool io_uring = true) {
  UniqueFd fuse = runtime::mount_fuse(target, "capsa-ext3", flags, ",default_permissions");
  std::fflush(nullptr);
  const pid_t server = ::fork();
  if (server == 0) {
    if (!server_log.empty()) {
      const int log_fd = ::open(server_log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
      if (log_fd < 0 || ::dup2(log_fd, STDERR_FILENO) < 0) ::_exit(125);
      log::set_level(log::Level::debug);
    }
    ::_exit(serve(volume, fuse.get(), container, io_uring));
  }
  return server;
}

// Mounts the image at `target` with the server in a child, runs `body`, unmounts, and
// returns whether the body passed and the server ended cleanly (status 0).
bool with_server(const std::string& image, std::uint64_t offset, bool writable, const std::string& target,
                 const std::function<bool()>& body, const std::string& server_log = "", bool io_uring = true) {
  Volume volume(image, offset, writable, image);
  const pid_t server =
      serve_in_child(volume, target, MS_NOSUID | MS_NODEV | (writable ? 0 : MS_RDONLY), nullptr, server_log, io_uring);
  bool ok = body();
  if (::umount2(target.c_str(), 0) != 0) {
    std::perror("umount");
    ok = false;
  }
  int status = 0;
  ::waitpid(server, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::cerr << "the server ended with status " << status << "\n";
    ok = false;
  }
  return ok;
}

class Ext3Server : public ::testing::Test {
 protected:
  void SetUp() override {
    if (tool("mkfs.ext3").empty() || tool("e2fsck").empty() || tool("debugfs").empty())
      GTEST_SKIP() << "e2fsprogs is not installed";
    if (::access("/dev/fuse", R_OK | W_OK) != 0) GTEST_SKIP() << "no usable /dev/fuse";
    ::mkdir(mnt.c_str(), 0755);
  }
  void expect_clean(const std::string& name) {
    auto fsck = test::run_process({tool("e2fsck"), "-fn", name});
    EXPECT_EQ(fsck.exit_code, 0) << fsck.out << fsck.err;
    int fd = ::open(image.c_str(), O_RDONLY);
    ASSERT_GE(fd, 0);
    const std::size_t question = name.find("?offset=");
    const std::uint64_t offset = question == std::string::npos ? 0 : std::stoull(name.substr(question + 8));
    EXPECT_TRUE(runtime::read_ext3_superblock(fd, offset).clean) << "marked clean when the server ended";
    ::close(fd);
  }
  std::string debugfs(const std::string& request, const std::string& name) {
    auto r = test::run_process({tool("debugfs"), "-R", request, name});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.out;
  }
  // What exercise_every_operation wrote, read back from the image by debugfs.
  void check_every_operation(bool root) {
    expect_clean(image);
    std::string big;
    for (int i = 0; i < 40000; ++i) big += std::to_string(i % 97) + ",";
    EXPECT_EQ(debugfs("cat /a/b/big", image), big);
    EXPECT_EQ(debugfs("cat /a/b/r1", image), "one");
    const std::string listing = debugfs("ls -l /many", image);
    EXPECT_NE(listing.find("file-with-a-longish-name-599"), std::string::npos);
    EXPECT_NE(debugfs("stat /a/t2", image).find("Links: 1"), std::string::npos);
    EXPECT_EQ(debugfs("cat /synced", image), "s");
    if (root) {
      EXPECT_NE(debugfs("stat /w", image).find("Type: character special"), std::string::npos);
    }
  }
  test::TempDir work;
  std::string image = work / "overlay.img";
  std::string mnt = work / "mnt";
};

// Every operation the kernel's overlayfs and a container's programs use, on the file system
// served at `m`; what it wrote is checked afterwards by check_every_operation.
bool exercise_every_operation(const std::string& m, bool root) {
  Checks c;
  // Directories, nested, with link counts that follow their subdirectories.
  c.expect(::mkdir((m + "/a").c_str(), 0750) == 0, "mkdir a");
  c.expect(::mkdir((m + "/a/b").c_str(), 0755) == 0, "mkdir a/b");
  c.expect(::mkdir((m + "/a/c").c_str(), 0755) == 0, "mkdir a/c");
  struct stat st {};
  c.expect(::stat((m + "/a").c_str(), &st) == 0 && st.st_nlink == 4 && (st.st_mode & 07777) == 0750 &&
               st.st_uid == ::geteuid(),
           "a: 4 links, mode 0750, the caller's");
  c.expect(::mkdir((m + "/a").c_str(), 0755) != 0 && errno == EEXIST, "mkdir of an existing name: EEXIST");
  // A file past the direct blocks (1 KiB blocks), read back whole.
  std::string big;
  for (int i = 0; i < 40000; ++i) big += std::to_string(i % 97) + ",";
  c.expect(spit(m + "/a/b/big", big), "write a/b/big");
  c.expect(slurp(m + "/a/b/big") == big, "a/b/big reads back");
  // Truncating frees the end and shows zeroes when the file grows again.
  c.expect(spit(m + "/t", std::string(10000, 'x')), "write t");
  c.expect(::truncate((m + "/t").c_str(), 100) == 0 && ::truncate((m + "/t").c_str(), 5000) == 0, "truncate t");
  c.expect(slurp(m + "/t") == std::string(100, 'x') + std::string(4900, '\0'), "t: 100 x's then zeroes");
  // Directory growth: 600 entries need many blocks of a directory.
  c.expect(::mkdir((m + "/many").c_str(), 0755) == 0, "mkdir many");
  for (int i = 0; i < 600; ++i) {
    int fd = ::open((m + "/many/file-with-a-longish-name-" + std::to_string(i)).c_str(), O_CREAT | O_WRONLY, 0644);
    c.expect(fd >= 0, "create many/" + std::to_string(i));
    if (fd >= 0) ::close(fd);
  }
  DIR* dir = ::opendir((m + "/many").c_str());
  int regular = 0, dots = 0;
  for (dirent* e; dir != nullptr && (e = ::readdir(dir)) != nullptr;) {
    if (e->d_type == DT_REG) ++regular;
    if (e->d_type == DT_DIR) ++dots;
  }
  if (dir != nullptr) ::closedir(dir);
  c.expect(regular == 600 && dots == 2, "readdir: 600 files and . and .., with their d_type");
  // Symlinks: fast (in the inode) and slow (in a block).
  const std::string long_target = std::string(200, 'L') + "/target";
  c.expect(::symlink("short", (m + "/fast").c_str()) == 0, "symlink fast");
  c.expect(::symlink(long_target.c_str(), (m + "/slow").c_str()) == 0, "symlink slow");
  char buf[512] = {};
  c.expect(::readlink((m + "/fast").c_str(), buf, sizeof buf) == 5 && std::string(buf, 5) == "short", "readlink fast");
  ssize_t n = ::readlink((m + "/slow").c_str(), buf, sizeof buf);
  c.expect(n == static_cast<ssize_t>(long_target.size()) && std::string(buf, n) == long_target, "readlink slow");
  // Hard links.
  c.expect(::link((m + "/t").c_str(), (m + "/a/t2").c_str()) == 0, "link");
  c.expect(::stat((m + "/t").c_str(), &st) == 0 && st.st_nlink == 2, "two links");
  c.expect(::unlink((m + "/t").c_str()) == 0, "unlink one name");
  c.expect(::stat((m + "/a/t2").c_str(), &st) == 0 && st.st_nlink == 1 && st.st_size == 5000, "one link left");
  // Renames: plain, across directories, refusing to replace, exchanging.
  c.expect(spit(m + "/r1", "one") && spit(m + "/r2", "two"), "write r1 r2");
  c.expect(::rename((m + "/r1").c_str(), (m + "/a/b/r1").c_str()) == 0, "rename across directories");
  c.expect(::renameat2(AT_FDCWD, (m + "/a/b/r1").c_str(), AT_FDCWD, (m + "/r2").c_str(), RENAME_NOREPLACE) != 0 &&
               errno == EEXIST,
           "RENAME_NOREPLACE onto a name: EEXIST");
  c.expect(::renameat2(AT_FDCWD, (m + "/a/b/r1").c_str(), AT_FDCWD, (m + "/r2").c_str(), RENAME_EXCHANGE) == 0,
           "RENAME_EXCHANGE");
  c.expect(slurp(m + "/r2") == "one" && slurp(m + "/a/b/r1") == "two", "exchanged");
  c.expect(::rename((m + "/a/c").c_str(), (m + "/c-moved").c_str()) == 0, "rename a directory up");
  c.expect(::stat((m + "/a").c_str(), &st) == 0 && st.st_nlink == 3, "a lost a subdirectory's link");
  c.expect(::rename((m + "/r2").c_str(), (m + "/a/b/r1").c_str()) == 0, "rename over a file");
  c.expect(slurp(m + "/a/b/r1") == "one" && ::access((m + "/r2").c_str(), F_OK) != 0, "replaced");
  // A whiteout, as overlayfs makes them (renameat2 with it needs CAP_MKNOD).
  if (root) {
    c.expect(spit(m + "/w", "w"), "write w");
    c.expect(::renameat2(AT_FDCWD, (m + "/w").c_str(), AT_FDCWD, (m + "/w2").c_str(), RENAME_WHITEOUT) == 0,
             "RENAME_WHITEOUT");
    c.expect(::lstat((m + "/w").c_str(), &st) == 0 && S_ISCHR(st.st_mode) && st.st_rdev == makedev(0, 0),
             "a 0/0 character device takes the old name");
    c.expect(slurp(m + "/w2") == "w", "the file has the new name");
    c.expect(::mknod((m + "/dev").c_str(), S_IFCHR | 0600, makedev(4, 300)) == 0, "mknod a device");
    c.expect(::lstat((m + "/dev").c_str(), &st) == 0 && st.st_rdev == makedev(4, 300), "its number");
  }
  c.expect(::mknod((m + "/fifo").c_str(), S_IFIFO | 0600, 0) == 0, "mknod a fifo");
  c.expect(::lstat((m + "/fifo").c_str(), &st) == 0 && S_ISFIFO(st.st_mode), "a fifo");
  // Refusals.
  c.expect(::rmdir((m + "/a").c_str()) != 0 && errno == ENOTEMPTY, "rmdir of a full directory: ENOTEMPTY");
  c.expect(::mkdir((m + "/" + std::string(256, 'n')).c_str(), 0755) != 0 && errno == ENAMETOOLONG,
           "a 256-byte name: ENAMETOOLONG");
  c.expect(::rmdir((m + "/c-moved").c_str()) == 0, "rmdir");
  // Times and modes.
  const timespec times[2] = {{1000000000, 5}, {1200000000, 123456789}};
  c.expect(::utimensat(AT_FDCWD, (m + "/a/t2").c_str(), times, 0) == 0, "utimensat");
  c.expect(::stat((m + "/a/t2").c_str(), &st) == 0 && st.st_mtim.tv_sec == 1200000000 &&
               st.st_mtim.tv_nsec == 123456789 && st.st_atim.tv_sec == 1000000000,
           "times kept to the nanosecond");
  const timespec now_times[2] = {{0, UTIME_NOW}, {0, UTIME_NOW}};
  c.expect(::utimensat(AT_FDCWD, (m + "/a/t2").c_str(), now_times, 0) == 0 && ::stat((m + "/a/t2").c_str(), &st) == 0 &&
               st.st_mtim.tv_sec > 1700000000,
           "UTIME_NOW");
  c.expect(::chmod((m + "/a/t2").c_str(), 04711) == 0 && ::stat((m + "/a/t2").c_str(), &st) == 0 &&
               (st.st_mode & 07777) == 04711,
           "chmod");
  // Extended attributes, as overlayfs keeps its own in a user namespace.
  const std::string a = m + "/a";
  c.expect(::setxattr(a.c_str(), "user.overlay.opaque", "y", 1, 0) == 0, "setxattr");
  c.expect(::setxattr(a.c_str(), "user.overlay.opaque", "y", 1, XATTR_CREATE) != 0 && errno == EEXIST,
           "XATTR_CREATE of an existing one: EEXIST");
  c.expect(::getxattr(a.c_str(), "user.overlay.opaque", buf, sizeof buf) == 1 && buf[0] == 'y', "getxattr");
  n = ::listxattr(a.c_str(), buf, sizeof buf);
  c.expect(n > 0 && std::string(buf, n).find("user.overlay.opaque") != std::string::npos, "listxattr");
  c.expect(::setxattr((m + "/a/t2").c_str(), "user.gone", "1", 1, 0) == 0, "setxattr user.gone");
  c.expect(::removexattr((m + "/a/t2").c_str(), "user.gone") == 0, "removexattr");
  c.expect(::getxattr((m + "/a/t2").c_str(), "user.gone", buf, sizeof buf) < 0 && errno == ENODATA,
           "a removed attribute: ENODATA");
  // A file removed while open stays readable until it is closed.
  c.expect(spit(m + "/open", "still here"), "write open");
  int fd = ::open((m + "/open").c_str(), O_RDONLY);
  c.expect(fd >= 0 && ::unlink((m + "/open").c_str()) == 0, "unlink an open file");
  n = fd >= 0 ? ::pread(fd, buf, sizeof buf, 0) : -1;
  c.expect(n == 10 && std::string(buf, 10) == "still here", "read after unlink");
  if (fd >= 0) ::close(fd);
  // fsync writes back what the server holds.
  fd = ::open((m + "/synced").c_str(), O_CREAT | O_WRONLY, 0600);
  c.expect(fd >= 0 && ::write(fd, "s", 1) == 1 && ::fsync(fd) == 0, "fsync");
  if (fd >= 0) ::close(fd);
  struct statvfs vfs {};
  c.expect(::statvfs(m.c_str(), &vfs) == 0 && vfs.f_bsize == 1024 && vfs.f_blocks > 30000 && vfs.f_bfree > 0 &&
               vfs.f_files > 0,
           "statfs");
  return c.ok;
}

TEST_F(Ext3Server, ServesEveryOperationAndLeavesAConsistentFileSystem) {
  make_ext3(image, 32);
  const std::string m = mnt;
  const bool root = ::geteuid() == 0;
  // Through /dev/fuse, whether or not this kernel would take FUSE over io_uring.
  int result = test::in_private_mount_namespace([&] {
    return with_server(
        image, 0, true, m, [&] { return exercise_every_operation(m, root); }, "", false);
  });
  if (result == 77) GTEST_SKIP() << "no private mount namespace here";
  ASSERT_EQ(result, 0);
  check_every_operation(root);
}

// The same through the kernel's FUSE-over-io_uring queues (Linux 6.14+), switched on for
// this test where root may, and the server's own count shows the rings answered.
TEST_F(Ext3Server, ServesEveryOperationThroughIoUringWhereTheKernelHasIt) {
  FuseUringSwitch uring;
  if (!uring.on()) GTEST_SKIP() << uring.why_off();
  make_ext3(image, 32);
  const std::string m = mnt;
  const bool root = ::geteuid() == 0;
  const std::string server_log = work / "server.log";
  int result = test::in_private_mount_namespace([&] {
    return with_server(
        image, 0, true, m, [&] { return exercise_every_operation(m, root); }, server_log);
  });
  if (result == 77) GTEST_SKIP() << "no private mount namespace here";
  ASSERT_EQ(result, 0) << slurp(server_log);
  check_every_operation(root);
  const std::string log_text = slurp(server_log);
  EXPECT_NE(log_text.find("answering through io_uring"), std::string::npos) << log_text;
  // Some 2,500 requests go to the server in all; all but INIT and the forgets come
  // through the rings.
  EXPECT_GT(answered_through_rings(log_text), 1000) << log_text;
}

// Where the kernel offers FUSE over io_uring but no ring can be made (io_uring turned off
// for everyone: kernel.io_uring_disabled=2), INIT does not accept it and /dev/fuse serves:
// had INIT accepted it, every request would wait forever for the rings.
TEST_F(Ext3Server, ServesThroughDevFuseWhereNoRingCanBeMade) {
  if (::geteuid() != 0) GTEST_SKIP() << "only root may turn io_uring off (kernel.io_uring_disabled)";
  FuseUringSwitch uring;
  if (!uring.on()) GTEST_SKIP() << uring.why_off();
  const std::string sysctl = "/proc/sys/kernel/io_uring_disabled";
  const std::string before = slurp(sysctl);
  if (before.empty() || !spit(sysctl, "2")) GTEST_SKIP() << "no " << sysctl << " to set";
  make_ext3(image, 32);
  const std::string m = mnt;
  const std::string server_log = work / "server.log";
  int result = test::in_private_mount_namespace([&] {
    return with_server(
        image, 0, true, m, [&] { return exercise_every_operation(m, true); }, server_log);
  });
  spit(sysctl, before);
  if (result == 77) GTEST_SKIP() << "no private mount namespace here";
  ASSERT_EQ(result, 0) << slurp(server_log);
  check_every_operation(true);
  const std::string log_text = slurp(server_log);
  EXPECT_NE(log_text.find("no io_uring"), std::string::npos) << log_text;
  EXPECT_EQ(answered_through_rings(log_text), 0) << log_text;
  EXPECT_NE(log_text.find("(0 queues)"), std::string::npos) << log_text;
}

TEST_F(Ext3Server, WhatItWroteIsWhatTheKernelsExt3Reads) {
  if (::geteuid() != 0) GTEST_SKIP() << "mounting an ext3 image with the kernel needs root";
  make_ext3(image, 16);
  const std::string m = mnt;
  int result = test::in_private_mount_namespace([&] {
    bool served = with_server(image, 0, true, m, [&] {
      Checks c;
      c.expect(::mkdir((m + "/d").c_str(), 0700) == 0 && spit(m + "/d/f", "kernel reads this") &&
                   ::symlink("d/f", (m + "/l").c_str()) == 0 &&
                   ::setxattr((m + "/d").c_str(), "user.k", "v", 1, 0) == 0,
               "write a tree");
      return c.ok;
    });
    if (!served) return false;
    auto mounted = test::run_process({"mount", "-o", "loop,ro", "-t", "ext3", image, m});
    if (mounted.exit_code != 0) {
      std::cerr << mounted.err;
      return false;
    }
    Checks c;
    struct stat st {};
    char value[8] = {};
    c.expect(slurp(m + "/l") == "kernel reads this", "the kernel follows the link to the file");
    c.expect(::stat((m + "/d").c_str(), &st) == 0 && (st.st_mode & 07777) == 0700, "the directory's mode");
    c.expect(::getxattr((m + "/d").c_str(), "user.k", value, sizeof value) == 1 && value[0] == 'v', "its xattr");
    ::umount2(m.c_str(), 0);
    return c.ok;
  });
  ASSERT_EQ(result, 0);
  expect_clean(image);
}

TEST_F(Ext3Server, ServesAFileSystemAtAnOffsetAndReadOnly) {
  const std::uint64_t offset = 1 << 20;  // as a SIF's overlay partition lies in the SIF
  make_ext3(image, 8, offset);
  const std::string name = image + "?offset=" + std::to_string(offset);
  const std::string m = mnt;
  int result = test::in_private_mount_namespace([&] {
    bool wrote = with_server(image, offset, true, m, [&] {
      Checks c;
      c.expect(spit(m + "/in-sif", "partition"), "write at an offset");
      return c.ok;
    });
    bool read = with_server(image, offset, false, m, [&] {
      Checks c;
      c.expect(slurp(m + "/in-sif") == "partition", "read-only: read");
      c.expect(::open((m + "/new").c_str(), O_CREAT | O_WRONLY, 0644) < 0 && errno == EROFS, "read-only: EROFS");
      return c.ok;
    });
    return wrote && read;
  });
  if (result == 77) GTEST_SKIP() << "no private mount namespace here";
  ASSERT_EQ(result, 0);
  expect_clean(name);
  EXPECT_EQ(debugfs("cat /in-sif", name), "partition");
  // The bytes around the partition are untouched.
  const std::string whole = test::read_file(image);
  EXPECT_EQ(whole.substr(0, offset), std::string(offset, 'P'));
  EXPECT_EQ(whole.substr(whole.size() - 4096), std::string(4096, 'Q'));
}

TEST_F(Ext3Server, AFullFileSystemAnswersENOSPCAndStaysConsistent) {
  make_ext3(image, 4);
  const std::string m = mnt;
  int result = test::in_private_mount_namespace([&] {
    return with_server(image, 0, true, m, [&] {
      Checks c;
      const std::string chunk(1 << 20, 'z');
      int fd = ::open((m + "/fill").c_str(), O_CREAT | O_WRONLY, 0644);
      c.expect(fd >= 0, "create fill");
      bool full = false;
      for (int i = 0; i < 16 && fd >= 0 && !full; ++i)
        if (::write(fd, chunk.data(), chunk.size()) < 0) full = errno == ENOSPC;
      if (fd >= 0 && ::fsync(fd) != 0) full = full || errno == ENOSPC;
      if (fd >= 0 && ::close(fd) != 0) full = full || errno == ENOSPC;
      c.expect(full, "writing 16 MiB to 4 MiB: ENOSPC");
      int made = 0;
      for (int i = 0; i < 5000; ++i) {
        if (::mkdir((m + "/d" + std::to_string(i)).c_str(), 0755) != 0) {
          c.expect(errno == ENOSPC, "mkdir on a full file system: ENOSPC");
          break;
        }
        ++made;
      }
      c.expect(::unlink((m + "/fill").c_str()) == 0, "removing the big file");
      c.expect(spit(m + "/after", "room again"), "writing after making room");
      return c.ok;
    });
  });
  if (result == 77) GTEST_SKIP() << "no private mount namespace here";
  ASSERT_EQ(result, 0);
  expect_clean(image);
  EXPECT_EQ(debugfs("cat /after", image), "room again");
}

// A removed file keeps its data while a descriptor has it open, and its space comes back
// when that closes, not when the kernel forgets the inode: the kernel sends FORGET after
// the requests already queued, so a write straight after `rm` on a full overlay failed
// with ENOSPC while the server waited for it (1 run in 5 under load). The O_PATH
// descriptor keeps the kernel's inode, and so its FORGET, back until the end.
TEST_F(Ext3Server, ARemovedFileKeepsItsDataWhileOpenAndItsSpaceComesBackAtTheLastClose) {
  make_ext3(image, 8);
  const std::string m = mnt;
  int result = test::in_private_mount_namespace([&] {
    return with_server(image, 0, true, m, [&] {
      Checks c;
      const std::string data(4 << 20, 'r');
      const auto free_bytes = [&] {
        struct statvfs st {};
        return ::statvfs(m.c_str(), &st) == 0 ? st.f_bfree * st.f_frsize : 0;
      };
      c.expect(spit(m + "/big", data), "write 4 MiB");
      const int reader = ::open((m + "/big").c_str(), O_RDONLY);
      const int held = ::open((m + "/big").c_str(), O_PATH);
      c.expect(reader >= 0 && held >= 0, "open it, and an O_PATH descriptor");
      const std::uint64_t before = free_bytes();
      c.expect(::unlink((m + "/big").c_str()) == 0, "removing it");
      // Dropped from the page cache: the read below asks the server.
      c.expect(::posix_fadvise(reader, 0, 0, POSIX_FADV_DONTNEED) == 0, "fadvise");
      std::string back(data.size(), '\0');
      c.expect(::pread(reader, back.data(), back.size(), 0) == static_cast<ssize_t>(back.size()) && back == data,
               "reading it after it was removed");
      c.expect(free_bytes() < before + data.size(), "its space still taken while open");
      if (reader >= 0) ::close(reader);
      c.expect(free_bytes() >= before + data.size(), "its 4 MiB free at the last close");
      if (held >= 0) ::close(held);
      return c.ok;
    });
  });
  if (result == 77) GTEST_SKIP() << "no private mount namespace here";
  ASSERT_EQ(result, 0);
  expect_clean(image);
}

TEST_F(Ext3Server, RefusesAFeatureItCannotWriteInOneLine) {
  auto made = test::run_process({tool("mkfs.ext4"), "-q", "-F", "-O", "quota", image, "8M"});
  if (made.exit_code != 0 && made.err.find("quota") != std::string::npos) GTEST_SKIP() << made.err;
  ASSERT_EQ(made.exit_code, 0) << made.err;
  try {
    Volume volume(image, 0, true, "my.img");
    FAIL() << "opened for writing";
  } catch (const Error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("overlay my.img"), std::string::npos) << message;
    EXPECT_NE(message.find("quota"), std::string::npos) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  }
  EXPECT_NO_THROW(Volume(image, 0, false, "my.img")) << "read-only it can be served";
  try {
    Volume volume(work.write("not-ext3", std::string(1 << 20, 'x')), 0, true, "junk.img");
    FAIL() << "opened junk";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("overlay junk.img: no ext3 file system"), std::string::npos) << e.what();
  }
}

TEST_F(Ext3Server, AServerKilledMidWayLeavesTheFileSystemMarkedForChecking) {
  make_ext3(image, 8);
  const std::string m = mnt;
  int result = test::in_private_mount_namespace([&] {
    Volume volume(image, 0, true, image);
    const pid_t server = serve_in_child(volume, m);
    Checks c;
    c.expect(::mkdir((m + "/x").c_str(), 0755) == 0, "mkdir");
    ::kill(server, SIGKILL);
    ::waitpid(server, nullptr, 0);
    ::umount2(m.c_str(), MNT_DETACH);
    return c.ok;
  });
  if (result == 77) GTEST_SKIP() << "no private mount namespace here";
  ASSERT_EQ(result, 0);
  int fd = ::open(image.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  EXPECT_FALSE(runtime::read_ext3_superblock(fd, 0).clean) << "in use until the server writes it back";
  ::close(fd);
  auto fsck = test::run_process({tool("e2fsck"), "-fy", image});
  EXPECT_LT(fsck.exit_code, 4) << fsck.out;
}

// Waits up to `seconds` for `pid`; false if it has not ended by then (then killed).
bool ended_within(pid_t pid, int seconds, int& status) {
  for (int i = 0; i < seconds * 50; ++i) {
    if (::waitpid(pid, &status, WNOHANG) == pid) return true;
    ::usleep(20'000);
  }
  ::kill(pid, SIGKILL);
  ::waitpid(pid, &status, 0);
  return false;
}

// Mounts a fresh image, serves it from a child watching `container` (if given), makes a
// directory through it, calls `end` while the mount stays, and checks that the server
// ends by itself, with status 0, having written the directory back.
void expect_server_ends_cleanly(const std::string& image, const std::string& m, const EndWatch* container,
                                const std::function<void(pid_t server)>& end) {
  int result = test::in_private_mount_namespace([&] {
    Volume volume(image, 0, true, image);
    const pid_t server = serve_in_child(volume, m, MS_NOSUID | MS_NODEV, container);
    Checks c;
    c.expect(::mkdir((m + "/made").c_str(), 0755) == 0, "mkdir");
    end(server);
    int status = 0;
    c.expect(ended_within(server, 10, status), "the server ended within 10 s");
    c.expect(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the server's status is 0");
    ::umount2(m.c_str(), MNT_DETACH);
    return c.ok;
  });
  if (result == 77) GTEST_SKIP() << "no private mount namespace here";
  ASSERT_EQ(result, 0);
  auto listing = test::run_process({tool("debugfs"), "-R", "ls -l /", image});
  EXPECT_NE(listing.out.find("made"), std::string::npos) << listing.out;
}

TEST_F(Ext3Server, SigtermEndsItWithTheFileSystemWrittenBack) {
  make_ext3(image, 8);
  expect_server_ends_cleanly(image, mnt, nullptr, [](pid_t server) { ::kill(server, SIGTERM); });
  expect_clean(image);
}

TEST_F(Ext3Server, TheEndOfItsContainerEndsItWithoutAnySignal) {
  make_ext3(image, 8);
  // The container: a child that ends when told; the server watches it and gets no signal.
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  std::fflush(nullptr);
  const pid_t container = ::fork();
  if (container == 0) {
    ::close(pipe_fds[1]);
    char byte;
    while (::read(pipe_fds[0], &byte, 1) < 0 && errno == EINTR) {
    }
    ::_exit(0);
  }
  ::close(pipe_fds[0]);
  const EndWatch watch = EndWatch::of(container);
  expect_server_ends_cleanly(image, mnt, &watch, [&](pid_t) { (void)!::write(pipe_fds[1], "x", 1); });
  ::close(pipe_fds[1]);
  ::waitpid(container, nullptr, 0);
  expect_clean(image);
}

}  // namespace
}  // namespace capsa::ext3
