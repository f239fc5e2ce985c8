#include "runtime/image_mount.hpp"

#include <fcntl.h>
#include <linux/loop.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <random>
#include <vector>

#include "util/error.hpp"
#include "util/fd.hpp"

namespace capsa::runtime {
namespace {

constexpr unsigned long kImageMountFlags = MS_RDONLY | MS_NOSUID | MS_NODEV;
constexpr int kLoopAttempts = 1024;

// A sysfs attribute's text, or "" when it does not exist (an unbound loop device).
std::string sysfs_text(const std::filesystem::path& path) {
  try {
    return read_whole_file(path.string());
  } catch (const std::exception&) {
    return "";
  }
}

// The loop driver reports the backing file's device in the kernel's "huge" encoding
// (new_encode_dev), not glibc's dev_t layout.
bool same_device(std::uint64_t kernel_encoded, dev_t dev) {
  const auto major_number = static_cast<unsigned>((kernel_encoded & 0xfff00) >> 8);
  const auto minor_number = static_cast<unsigned>((kernel_encoded & 0xff) | ((kernel_encoded >> 12) & 0xfff00));
  return major_number == major(dev) && minor_number == minor(dev);
}

// A loop device that another container already attached, read-only and auto-clearing, to
// exactly this region of this file (another rank of the job on this node), opened. While
// it is held open it can be neither cleared nor rebound, so the mount that follows gets
// it; and mounting it again yields the same squashfs superblock: the ranks of a node share
// one page cache and one LOOP_CONFIGURE (slow: it waits for the block layer) instead of
// configuring one device each. Empty when there is none.
UniqueFd attached_loop_device(const SquashfsLocation& image, int backing_fd, std::string* device) {
  struct stat backing {};
  if (::fstat(backing_fd, &backing) != 0) return UniqueFd();
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/sys/block", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("loop", 0) != 0) continue;
    // Only bound devices have a backing_file; its path is a cheap first filter.
    if (sysfs_text(entry.path() / "loop/backing_file") != image.file + "\n") continue;
    UniqueFd fd(::open(("/dev/" + name).c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd) continue;
    loop_info64 info{};
    if (::ioctl(fd.get(), LOOP_GET_STATUS64, &info) != 0) continue;
    const unsigned wanted = LO_FLAGS_READ_ONLY | LO_FLAGS_AUTOCLEAR;
    if (!same_device(info.lo_device, backing.st_dev) || info.lo_inode != backing.st_ino ||
        info.lo_offset != image.offset || info.lo_sizelimit != image.size || (info.lo_flags & wanted) != wanted)
      continue;
    *device = "/dev/" + name;
    return fd;
  }
  return UniqueFd();
}

void mount_with_loop_device(const SquashfsLocation& image, const std::string& target) {
  UniqueFd backing = open_file(image.file, O_RDONLY);
  std::string shared;
  if (UniqueFd attached = attached_loop_device(image, backing.get(), &shared)) {
    if (::mount(shared.c_str(), target.c_str(), "squashfs", kImageMountFlags, nullptr) == 0) return;
    // Being torn down, or mounted with other flags: configure a device of our own.
  }
  UniqueFd control = open_file("/dev/loop-control", O_RDWR);
  // Another container may grab the free device between GET_FREE and CONFIGURE: retry.
  // GET_FREE hands every contender the same lowest free device, so of N containers
  // starting at once (the ranks of a node) one wins per round and the last needs about N
  // rounds: the bound is generous, and a short random pause spreads the contenders out.
  std::minstd_rand jitter(static_cast<unsigned>(::getpid()));
  for (int attempt = 0; attempt < kLoopAttempts; ++attempt) {
    int number = ::ioctl(control.get(), LOOP_CTL_GET_FREE);
    if (number < 0) throw_errno("finding a free loop device");
    std::string device = "/dev/loop" + std::to_string(number);
    UniqueFd loop = open_file(device, O_RDONLY);
    loop_config config{};
    config.fd = static_cast<__u32>(backing.get());
    config.info.lo_offset = image.offset;
    config.info.lo_sizelimit = image.size;
    // Auto-clear: the device is released when its last user (the mount) goes away.
    config.info.lo_flags = LO_FLAGS_READ_ONLY | LO_FLAGS_AUTOCLEAR;
    if (::ioctl(loop.get(), LOOP_CONFIGURE, &config) != 0) {
      if (errno == EBUSY) {
        ::usleep(static_cast<useconds_t>(jitter() % 2000));
        continue;
      }
      throw_errno("configuring " + device + " for " + image.file);
    }
    if (::mount(device.c_str(), target.c_str(), "squashfs", kImageMountFlags, nullptr) != 0) {
      int err = errno;
      ::ioctl(loop.get(), LOOP_CLR_FD, 0);
      throw SystemError("mounting the squashfs of " + image.file + " from " + device, err);
    }
    return;
  }
  throw Error("no free loop device for " + image.file + " after " + std::to_string(kLoopAttempts) + " attempts");
}

void mount_with_squashfuse(const SquashfsLocation& image, const std::string& target) {
  UniqueFd fuse(::open("/dev/fuse", O_RDWR));  // inherited by squashfuse: no O_CLOEXEC
  if (!fuse) {
    int err = errno;
    throw SystemError("opening /dev/fuse (unprivileged containers mount their image with FUSE; "
                      "check that the fuse module is loaded and /dev/fuse is mode 0666)", err);
  }
  std::string options = "fd=" + std::to_string(fuse.get()) + ",rootmode=40000,user_id=" +
                        std::to_string(::getuid()) + ",group_id=" + std::to_string(::getgid());
  if (::mount("squashfuse", target.c_str(), "fuse.squashfuse", kImageMountFlags, options.c_str()) != 0)
    throw_errno("mounting FUSE at " + target);

  pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) throw_errno("starting squashfuse_ll");
  if (pid == 0) {
    // The server must not outlive the container it serves.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(1);
    int null_fd = ::open("/dev/null", O_RDWR);
    if (null_fd >= 0) {
      ::dup2(null_fd, STDIN_FILENO);
      ::dup2(null_fd, STDOUT_FILENO);
    }
    std::string offset = "offset=" + std::to_string(image.offset);
    std::string mountpoint = "/dev/fd/" + std::to_string(fuse.get());
    ::execlp("squashfuse_ll", "squashfuse_ll", "-f", "-o", offset.c_str(), image.file.c_str(), mountpoint.c_str(),
             static_cast<char*>(nullptr));
    std::fprintf(stderr, "capsa: cannot run squashfuse_ll: %s (install the squashfuse package)\n", std::strerror(errno));
    ::_exit(127);
  }
  // Only the server holds the connection now: if it dies, the kernel aborts the mount
  // and accesses fail with ENOTCONN instead of waiting forever.
  fuse.reset();
  struct stat st {};
  if (::stat(target.c_str(), &st) != 0) {
    int err = errno;
    throw SystemError("the FUSE server for " + image.file + " did not start (squashfuse_ll)", err);
  }
}

}  // namespace

MountDriver mount_squashfs(const SquashfsLocation& image, const std::string& target, bool privileged) {
  if (privileged) {
    mount_with_loop_device(image, target);
    return MountDriver::KernelLoop;
  }
  mount_with_squashfuse(image, target);
  return MountDriver::Fuse;
}

}  // namespace capsa::runtime
