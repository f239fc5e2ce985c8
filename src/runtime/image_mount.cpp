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
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <cstring>
#include <vector>

#include "squashfs/fuse_server.hpp"
#include "util/error.hpp"
#include "util/fd.hpp"

namespace capsa::runtime {
namespace {

constexpr unsigned long kImageMountFlags = MS_RDONLY | MS_NOSUID | MS_NODEV;

void mount_with_loop_device(const SquashfsLocation& image, const std::string& target) {
  UniqueFd control = open_file("/dev/loop-control", O_RDWR);
  UniqueFd backing = open_file(image.file, O_RDONLY);
  // Another container may grab the free device between GET_FREE and CONFIGURE: retry.
  for (int attempt = 0; attempt < 16; ++attempt) {
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
      if (errno == EBUSY) continue;
      throw_errno("configuring " + device + " for " + image.file);
    }
    if (::mount(device.c_str(), target.c_str(), "squashfs", kImageMountFlags, nullptr) != 0) {
      int err = errno;
      ::ioctl(loop.get(), LOOP_CLR_FD, 0);
      throw SystemError("mounting the squashfs of " + image.file + " from " + device, err);
    }
    return;
  }
  throw Error("no free loop device for " + image.file + " after 16 attempts");
}

// Mounts FUSE at `target` and returns the connection, to be served by a child.
UniqueFd mount_fuse(const std::string& target, const char* source) {
  UniqueFd fuse(::open("/dev/fuse", O_RDWR | O_CLOEXEC));
  if (!fuse) {
    int err = errno;
    throw SystemError("opening /dev/fuse (unprivileged containers mount their image with FUSE; "
                      "check that the fuse module is loaded and /dev/fuse is mode 0666)", err);
  }
  std::string options = "fd=" + std::to_string(fuse.get()) + ",rootmode=40000,user_id=" +
                        std::to_string(::getuid()) + ",group_id=" + std::to_string(::getgid());
  std::string type = std::string("fuse.") + source;
  if (::mount(source, target.c_str(), type.c_str(), kImageMountFlags, options.c_str()) != 0)
    throw_errno("mounting FUSE at " + target);
  return fuse;
}

// Forks the process that serves `fuse`; `serve` runs in the child and returns its exit
// status. The parent closes its copy of the connection, so that only the server holds
// it: if the server dies, the kernel aborts the mount and accesses fail with ENOTCONN
// instead of waiting forever.
template <typename Serve>
void start_server(UniqueFd fuse, const SquashfsLocation& image, const std::string& target, const char* name,
                  Serve&& serve) {
  pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) throw_errno(std::string("starting the FUSE server (") + name + ")");
  if (pid == 0) {
    // The server must not outlive the container it serves.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(1);
    int null_fd = ::open("/dev/null", O_RDWR);
    if (null_fd >= 0) {
      ::dup2(null_fd, STDIN_FILENO);
      ::dup2(null_fd, STDOUT_FILENO);
    }
    // Nothing may unwind into the caller's code: this child must never become a container.
    int status = 1;
    try {
      status = serve(fuse.get());
    } catch (const std::exception& e) {
      std::fprintf(stderr, "capsa: FUSE server (%s) failed: %s\n", name, e.what());
    } catch (...) {
    }
    ::_exit(status);
  }
  fuse.reset();
  struct stat st {};
  if (::stat(target.c_str(), &st) != 0) {
    int err = errno;
    throw SystemError("the FUSE server for " + image.file + " did not start (" + name + ")", err);
  }
}

void mount_with_squashfuse(const SquashfsLocation& image, const std::string& target) {
  UniqueFd fuse = mount_fuse(target, "squashfuse");
  start_server(std::move(fuse), image, target, "squashfuse_ll", [&](int fd) {
    ::fcntl(fd, F_SETFD, 0);  // squashfuse_ll inherits the connection
    std::string offset = "offset=" + std::to_string(image.offset);
    std::string mountpoint = "/dev/fd/" + std::to_string(fd);
    ::execlp("squashfuse_ll", "squashfuse_ll", "-f", "-o", offset.c_str(), image.file.c_str(), mountpoint.c_str(),
             static_cast<char*>(nullptr));
    std::fprintf(stderr, "capsa: cannot run squashfuse_ll: %s (install the squashfuse package, or unset CAPSA_FUSE)\n",
                 std::strerror(errno));
    return 127;
  });
}

void mount_with_builtin_server(const SquashfsLocation& image, const std::string& target) {
  // Opened and checked before anything is mounted, so a broken image is reported here.
  auto server = std::make_shared<squashfs::FuseImage>(image.file, image.offset, image.size);
  UniqueFd fuse = mount_fuse(target, "capsa");
  start_server(std::move(fuse), image, target, "capsa", [&](int fd) { return server->serve(fd); });
}

}  // namespace

MountDriver unprivileged_driver() {
  const char* wanted = std::getenv("CAPSA_FUSE");
  if (wanted == nullptr || *wanted == '\0' || std::strcmp(wanted, "builtin") == 0) return MountDriver::Builtin;
  if (std::strcmp(wanted, "squashfuse") == 0) return MountDriver::Squashfuse;
  throw Error(std::string("CAPSA_FUSE=") + wanted + ": unknown FUSE server (use builtin or squashfuse)");
}

void mount_squashfs_with(MountDriver driver, const SquashfsLocation& image, const std::string& target) {
  switch (driver) {
    case MountDriver::KernelLoop: mount_with_loop_device(image, target); return;
    case MountDriver::Builtin: mount_with_builtin_server(image, target); return;
    case MountDriver::Squashfuse: mount_with_squashfuse(image, target); return;
  }
}

MountDriver mount_squashfs(const SquashfsLocation& image, const std::string& target, bool privileged) {
  MountDriver driver = privileged ? MountDriver::KernelLoop : unprivileged_driver();
  mount_squashfs_with(driver, image, target);
  return driver;
}

}  // namespace capsa::runtime
