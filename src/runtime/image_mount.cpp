#include "runtime/image_mount.hpp"

#include <fcntl.h>
#include <linux/loop.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <random>
#include <vector>

#include "util/error.hpp"
#include "util/fd.hpp"

namespace capsa::runtime {
namespace {

constexpr unsigned long kImageMountFlags = MS_RDONLY | MS_NOSUID | MS_NODEV;
constexpr int kLoopAttempts = 1024;

void mount_with_loop_device(const SquashfsLocation& image, const std::string& target) {
  UniqueFd control = open_file("/dev/loop-control", O_RDWR);
  UniqueFd backing = open_file(image.file, O_RDONLY);
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
