#include "runtime/image_mount.hpp"

#include <fcntl.h>
#include <linux/loop.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "util/error.hpp"
#include "util/fd.hpp"

namespace capsa::runtime {
namespace {

constexpr unsigned long kImageMountFlags = MS_RDONLY | MS_NOSUID | MS_NODEV;

void mount_with_loop_device(const SquashfsLocation& image, const std::string& target) {
  UniqueFd control = open_file("/dev/loop-control", O_RDWR);
  UniqueFd backing = open_file(image.file, O_RDONLY);
  // When a job's ranks start together, GET_FREE hands them all the same number and all
  // but one lose the race to CONFIGURE. capsa processes take turns through an exclusive
  // lock on /dev/loop-control, held for those two calls only; other tools (losetup,
  // mount -o loop) may still take a device in between, hence the retries.
  constexpr int kAttempts = 64;
  for (int attempt = 0; attempt < kAttempts; ++attempt) {
    while (::flock(control.get(), LOCK_EX) != 0) {
      if (errno != EINTR) throw_errno("locking /dev/loop-control");
    }
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
    int configured = ::ioctl(loop.get(), LOOP_CONFIGURE, &config);
    int err = errno;
    ::flock(control.get(), LOCK_UN);
    if (configured != 0) {
      if (err == EBUSY) {
        ::usleep(static_cast<useconds_t>(1000 * (1 + attempt % 8)));  // someone else's: let them finish
        continue;
      }
      throw SystemError("configuring " + device + " for " + image.file, err);
    }
    if (::mount(device.c_str(), target.c_str(), "squashfs", kImageMountFlags, nullptr) != 0) {
      err = errno;
      ::ioctl(loop.get(), LOOP_CLR_FD, 0);
      throw SystemError("mounting the squashfs of " + image.file + " from " + device, err);
    }
    return;
  }
  throw Error("no free loop device for " + image.file + " after " + std::to_string(kAttempts) + " attempts");
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
    // A clean environment: the server needs nothing from the caller's, which may hold
    // registry passwords (APPTAINER_DOCKER_PASSWORD) that no helper process should carry.
    const char* path = std::getenv("PATH");
    std::string path_entry = std::string("PATH=") + (path && *path ? path : "/usr/local/bin:/usr/bin:/bin");
    char* clean_environment[] = {path_entry.data(), nullptr};
    std::array<const char*, 7> argv = {"squashfuse_ll", "-f", "-o", offset.c_str(), image.file.c_str(),
                                       mountpoint.c_str(), nullptr};
    ::execvpe(argv[0], const_cast<char* const*>(argv.data()), clean_environment);
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
