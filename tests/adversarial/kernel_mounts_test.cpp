// Finding 4 of the hardening audit: root gave files a user can write to kernel drivers
// (an ext3 overlay on a loop device, which the user could change under the mounted file
// system), and root's FUSE servers parsed such files with all of root's privileges. Now
// only files root alone writes reach the kernel's ext3 driver, and root's FUSE servers
// give up root once mounted (runtime/server_confinement.hpp).
#include <dirent.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <sstream>
#include <thread>

#include "people.hpp"
#include "support/background.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"
#include "support/test_env.hpp"

namespace capsa::adversarial {
namespace {

std::string busybox() { return test::sif_fixture("real/busybox_amd64.sif"); }

// Root's capsa in the background (a container that sleeps), ended at the end of the scope
// with SIGTERM, as a job's end would end it, and waited for.
class RootContainer {
 public:
  explicit RootContainer(const std::vector<std::string>& args) : capsa_(with_site_capsa(args), "/dev/null") {}
  ~RootContainer() {
    capsa_.signal(SIGTERM);
    capsa_.wait();
  }
  RootContainer(const RootContainer&) = delete;
  RootContainer& operator=(const RootContainer&) = delete;

 private:
  static std::vector<std::string> with_site_capsa(std::vector<std::string> args) {
    args.insert(args.begin(), site_capsa());
    return args;
  }
  test::Background capsa_;
};

std::string link_of(const std::string& path) {
  char buffer[4096];
  ssize_t n = ::readlink(path.c_str(), buffer, sizeof buffer - 1);
  return n > 0 ? std::string(buffer, static_cast<std::size_t>(n)) : std::string();
}

pid_t parent_of(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  const std::size_t close = text.rfind(')');
  return close == std::string::npos ? 0 : std::atoi(text.c_str() + close + 4);
}

// The process that holds both /dev/fuse and `file` open and has no child that does: the
// FUSE server of `file`, not the process that waits for it (which inherited both). The
// link reads "/fuse" from a process in the container's mount namespace.
std::optional<pid_t> server_of(const std::string& file) {
  std::vector<pid_t> holders;
  DIR* proc = ::opendir("/proc");
  while (dirent* entry = proc != nullptr ? ::readdir(proc) : nullptr) {
    const pid_t pid = std::atoi(entry->d_name);
    if (pid <= 0) continue;
    const std::string fds = "/proc/" + std::to_string(pid) + "/fd";
    bool fuse = false, image = false;
    if (DIR* dir = ::opendir(fds.c_str())) {
      while (dirent* fd = ::readdir(dir)) {
        const std::string target = link_of(fds + "/" + fd->d_name);
        fuse = fuse || target == "/dev/fuse" || target == "/fuse";
        image = image || target == file;
      }
      ::closedir(dir);
    }
    if (fuse && image) holders.push_back(pid);
  }
  if (proc != nullptr) ::closedir(proc);
  for (pid_t candidate : holders)
    if (std::none_of(holders.begin(), holders.end(), [&](pid_t other) { return parent_of(other) == candidate; }))
      return candidate;
  return std::nullopt;
}

// Once the container's command runs (it touches `ready`), the server that serves `file`.
std::optional<pid_t> await_server_of(const std::string& file, const std::string& ready) {
  for (int i = 0; i < 200 && !std::filesystem::exists(ready); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  if (!std::filesystem::exists(ready)) return std::nullopt;
  return server_of(file);
}

// The "Name:\tvalue" line of /proc/PID/status.
std::string status_field(pid_t pid, const std::string& name) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(status, line);)
    if (line.starts_with(name + ":")) {
      std::string value = line.substr(name.size() + 1);
      while (!value.empty() && (value.front() == '\t' || value.front() == ' ')) value.erase(0, 1);
      return value;
    }
  return "";
}

void expect_confined(pid_t server) {
  EXPECT_EQ(status_field(server, "Uid"), "65534\t65534\t65534\t65534") << "runs as root";
  EXPECT_EQ(status_field(server, "CapEff"), "0000000000000000");
  EXPECT_EQ(status_field(server, "CapPrm"), "0000000000000000");
  EXPECT_EQ(status_field(server, "NoNewPrivs"), "1");
  EXPECT_EQ(status_field(server, "Seccomp"), "2") << "no seccomp filter";
}

// An ext3 overlay image of `owner`'s, mode `mode`.
std::string ext3_overlay(const test::TempDir& dir, const Person* owner, mode_t mode) {
  std::string path = dir / "overlay.img";
  auto made =
      test::run_process({"sh", "-c", "truncate -s 32M '" + path + "' && /usr/sbin/mkfs.ext3 -q -F '" + path + "'"});
  EXPECT_EQ(made.exit_code, 0) << made.err;
  if (owner != nullptr) ::chown(path.c_str(), owner->uid, owner->gid);
  ::chmod(path.c_str(), mode);
  return path;
}

std::string loop_devices_of(const std::string& file) { return test::run_process({"losetup", "-j", file}).out; }

TEST(KernelMounts, RootServesAUsersExt3OverlayThroughAConfinedFuseServer) {
  test::TempDir dir;
  ::chmod(dir.path().c_str(), 0755);
  const std::string overlay = ext3_overlay(dir, &attacker(), 0644);
  write_site_conf("");
  {
    RootContainer container({"exec", "--overlay", overlay, busybox(), "sh", "-c",
                             "echo kept > /written; touch " + (dir / "ready") + "; sleep 20"});
    const std::optional<pid_t> server = await_server_of(overlay, dir / "ready");
    ASSERT_TRUE(server) << "no FUSE server serves " << overlay << "; loop devices: " << loop_devices_of(overlay);
    EXPECT_EQ(loop_devices_of(overlay), "") << "the kernel mounts a file the user can write";
    expect_confined(*server);
  }
  // What the container wrote went through the server into the user's file.
  auto again = test::run_process({site_capsa(), "exec", "--overlay", overlay, busybox(), "cat", "/written"});
  EXPECT_EQ(again.out, "kept\n") << again.err;
}

TEST(KernelMounts, RootStillMountsAnExt3OverlayOnlyRootWritesWithTheKernel) {
  test::TempDir dir;
  ::chmod(dir.path().c_str(), 0755);
  const std::string overlay = ext3_overlay(dir, nullptr, 0644);
  write_site_conf("");
  RootContainer container({"exec", "--overlay", overlay, busybox(), "sleep", "20"});
  std::string loops;
  for (int i = 0; i < 100 && loops.empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    loops = loop_devices_of(overlay);
  }
  EXPECT_NE(loops, "") << "root's own overlay is no longer on the kernel's ext3";
}

TEST(KernelMounts, AllowKernelExtfsNoServesEvenRootsOwnOverlayThroughFuse) {
  test::TempDir dir;
  ::chmod(dir.path().c_str(), 0755);
  const std::string overlay = ext3_overlay(dir, nullptr, 0644);
  write_site_conf("allow kernel extfs = no\n");
  {
    RootContainer container(
        {"exec", "--overlay", overlay, busybox(), "sh", "-c", "touch " + (dir / "ready") + "; sleep 20"});
    const std::optional<pid_t> server = await_server_of(overlay, dir / "ready");
    ASSERT_TRUE(server) << "refused or on the kernel: " << loop_devices_of(overlay);
    expect_confined(*server);
  }
  write_site_conf("");
}

TEST(KernelMounts, RootsSquashfsFuseServerGivesUpRoot) {
  test::TempDir dir;
  ::chmod(dir.path().c_str(), 0755);
  const std::string image = dir / "image.sif";
  std::filesystem::copy_file(busybox(), image);
  write_site_conf("allow kernel squashfs = no\n");
  {
    RootContainer container({"exec", image, "sh", "-c", "touch " + (dir / "ready") + "; sleep 20"});
    const std::optional<pid_t> server = await_server_of(image, dir / "ready");
    ASSERT_TRUE(server) << "no FUSE server serves " << image;
    expect_confined(*server);
  }
  write_site_conf("");
}

TEST(KernelMounts, RootRunsAnImageAUserCanWriteThroughAConfinedFuseServer) {
  test::TempDir dir;
  ::chmod(dir.path().c_str(), 0755);
  const std::string image = dir / "image.sif";
  std::filesystem::copy_file(busybox(), image);
  ASSERT_EQ(::chown(image.c_str(), attacker().uid, attacker().gid), 0);
  write_site_conf("");
  RootContainer container({"exec", image, "sh", "-c", "touch " + (dir / "ready") + "; sleep 20"});
  const std::optional<pid_t> server = await_server_of(image, dir / "ready");
  ASSERT_TRUE(server) << "no FUSE server serves " << image << "; loop devices: " << loop_devices_of(image);
  EXPECT_EQ(loop_devices_of(image), "") << "the kernel mounts a file the user can write";
  expect_confined(*server);
}

}  // namespace
}  // namespace capsa::adversarial
