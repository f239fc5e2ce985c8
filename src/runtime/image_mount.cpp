#include "runtime/image_mount.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <vector>

#include "runtime/lone_start.hpp"
#include "runtime/loop_device.hpp"
#include "runtime/server_confinement.hpp"
#include "squashfs/fuse_server.hpp"
#include "util/detached_child.hpp"
#include "util/environment_block.hpp"
#include "util/error.hpp"
#include "util/fd.hpp"
#include "util/find_executable.hpp"
#include "util/log.hpp"
#include "util/process.hpp"

namespace capsa::runtime {
namespace {

constexpr unsigned long kImageMountFlags = MS_RDONLY | MS_NOSUID | MS_NODEV;

// Who may use a FUSE mount of the image. Root's containers may switch to other users (su,
// a service's own account), and an underlay root binds the image's folders in directly,
// with no overlayfs (which reads its layers with the mounter's credentials) in between:
// root's mount is everyone's, the kernel checking the image's modes, as on the kernel's
// squashfs. Anyone else's is theirs alone, as FUSE makes it by default.
enum class FuseUsers { Mounter, Everyone };

const char* fuse_options_for(FuseUsers users) {
  return users == FuseUsers::Everyone ? ",allow_other,default_permissions" : "";
}

void mount_with_loop_device(const SquashfsLocation& image, const std::string& target) {
  UniqueFd backing = image.fd >= 0 ? open_file("/proc/self/fd/" + std::to_string(image.fd), O_RDONLY | O_CLOEXEC)
                                   : open_file(image.file, O_RDONLY);
  LoopDevice loop = attach_read_only_loop(backing.get(), image.file, image.offset, image.size);
  // On failure nothing needs undoing: closing the last descriptor auto-clears the device.
  if (::mount(loop.path.c_str(), target.c_str(), "squashfs", kImageMountFlags, nullptr) != 0)
    throw_errno("mounting the squashfs of " + image.file + " from " + loop.path);
}

// The first request waits for the server's answer to the kernel's INIT.
void await_server(const SquashfsLocation& image, const std::string& target, const char* name) {
  struct stat st {};
  if (::stat(target.c_str(), &st) != 0) {
    int err = errno;
    throw SystemError("the FUSE server for " + image.file + " did not start (" + name + ")", err);
  }
}

// The server process's work: standard input and output to /dev/null, none of the
// caller's environment, then `serve`, whose failure is logged.
template <typename Serve>
int run_server(const char* name, Serve&& serve) {
  int null_fd = ::open("/dev/null", O_RDWR);
  if (null_fd >= 0) {
    ::dup2(null_fd, STDIN_FILENO);
    ::dup2(null_fd, STDOUT_FILENO);
  }
  wipe_inherited_environment();
  try {
    return serve();
  } catch (const std::exception& e) {
    log::error({"FUSE server (", name, ") failed: ", e.what()});
  }
  return 1;
}

// `starter` starts the process that serves `fuse`. The parent closes its copy of the
// connection, so that only the server holds it: if the server dies, the kernel aborts
// the mount and accesses fail with ENOTCONN instead of waiting forever. The server must
// live as long as the container, and is no child of it (util/detached_child.hpp: a
// command that waits for all its children would wait for it forever). Returns the
// starter, to be reaped once the server answers (await_image): the forks between here
// and the server happen while the caller carries on.
Process server_started(Process starter, UniqueFd fuse, const SquashfsLocation& image, const std::string& target,
                       const char* name, bool wait) {
  fuse.reset();
  if (wait) {
    await_server(image, target, name);
    starter.wait();
  }
  return starter;
}

Process mount_with_squashfuse(const SquashfsLocation& image, const std::string& target, bool wait, FuseUsers users) {
  // Checked first: a server that cannot start would only show as a dead mount.
  const char* host_path = std::getenv("PATH");
  const std::string path = host_path && *host_path ? host_path : "/usr/local/bin:/usr/bin:/bin";
  const std::string program = find_executable("squashfuse_ll", path, RelativeEntries::Search);
  if (program.empty())
    throw Error("squashfuse_ll was not found on PATH (CAPSA_FUSE=squashfuse mounts images with it: "
                "install the squashfuse package, or unset CAPSA_FUSE for capsa's own server)");
  UniqueFd fuse = mount_fuse(target, "squashfuse", kImageMountFlags, fuse_options_for(users));
  const int fd = fuse.get();
  // squashfuse_ll ends on its parent-death signal, from the watcher, with the container.
  Process starter = DetachedChild::start_unreported(
      [&] {
        return run_server("squashfuse_ll", [&] {
          ::fcntl(fd, F_SETFD, 0);  // squashfuse_ll inherits the connection
          std::string offset = "offset=" + std::to_string(image.offset);
          std::string mountpoint = "/dev/fd/" + std::to_string(fd);
          // A clean environment (run_server wiped the inherited one): the server needs
          // nothing from the caller's, which may hold registry passwords.
          std::string path_entry = "PATH=" + path;
          char* clean_environment[] = {path_entry.data(), nullptr};
          std::array<const char*, 7> argv = {"squashfuse_ll",    "-f",   "-o", offset.c_str(), image.file.c_str(),
                                             mountpoint.c_str(), nullptr};
          ::execve(program.c_str(), const_cast<char* const*>(argv.data()), clean_environment);
          log::error({"cannot run ", program, ": ", std::strerror(errno),
                      " (install the squashfuse package, or unset CAPSA_FUSE)"});
          return 127;
        });
      },
      {.parent_death_signal = SIGKILL, .name = "the FUSE server"});
  return server_started(std::move(starter), std::move(fuse), image, target, "squashfuse_ll", wait);
}

// `lone_start`: root's lone-start lock (lone_start.hpp) or -1. The server lets go of it as
// soon as its container has ended: its own exit (the namespace's and the address space's
// teardown) takes milliseconds more, during which a next start would needlessly take the
// kernel's squashfs.
Process mount_with_builtin_server(const SquashfsLocation& image, const std::string& target, bool wait, FuseUsers users,
                                  int lone_start) {
  // Opened and checked before anything is mounted, so a broken image is reported here.
  std::optional<squashfs::FuseImage> server;
  if (image.opened)
    server.emplace(image.opened);
  else
    server.emplace(image.file, image.offset, image.size);
  UniqueFd fuse = mount_fuse(target, "capsa", kImageMountFlags, fuse_options_for(users));
  const int fd = fuse.get();
  // The server watches the container itself, and exits once it has ended.
  Process starter = DetachedChild::start_watching_itself(
      [&](const EndWatch& container) {
        return run_server("capsa", [&] {
          if (users == FuseUsers::Everyone) confine_root_fuse_server(false);  // root's mount
          return server->serve(fd, container, lone_start);
        });
      },
      "the FUSE server");
  return server_started(std::move(starter), std::move(fuse), image, target, "capsa", wait);
}

// Whether root may give this image to the kernel's squashfs: the file the loop device
// would be made from, judged by its descriptor when the checks opened one.
bool kernel_may_mount(const SquashfsLocation& image) {
  struct stat st {};
  const int rc = image.fd >= 0 ? ::fstat(image.fd, &st) : ::stat(image.file.c_str(), &st);
  return rc == 0 && only_root_writes(st);
}

}  // namespace

bool only_root_writes(const struct stat& st) { return st.st_uid == 0 && (st.st_mode & (S_IWGRP | S_IWOTH)) == 0; }

UniqueFd mount_fuse(const std::string& target, const char* source, unsigned long flags,
                    const std::string& options_extra) {
  UniqueFd fuse(::open("/dev/fuse", O_RDWR | O_CLOEXEC));
  if (!fuse) {
    int err = errno;
    throw SystemError("cannot open /dev/fuse: " + std::string(std::strerror(err)) +
                          " (unprivileged containers mount their image with FUSE: load the fuse module and make "
                          "/dev/fuse mode 0666, or run as root)",
                      err, SystemError::kPreformatted);
  }
  std::string options = "fd=" + std::to_string(fuse.get()) + ",rootmode=40000,user_id=" + std::to_string(::getuid()) +
                        ",group_id=" + std::to_string(::getgid()) + options_extra;
  std::string type = std::string("fuse.") + source;
  if (::mount(source, target.c_str(), type.c_str(), flags, options.c_str()) != 0)
    throw_errno("mounting FUSE at " + target);
  return fuse;
}

std::optional<MountDriver> requested_driver() {
  const char* wanted = std::getenv("CAPSA_FUSE");
  if (wanted == nullptr || *wanted == '\0' || std::strcmp(wanted, "builtin") == 0) return MountDriver::Builtin;
  if (std::strcmp(wanted, "squashfuse") == 0) return MountDriver::Squashfuse;
  return std::nullopt;
}

MountDriver unprivileged_driver() {
  if (std::optional<MountDriver> driver = requested_driver()) return *driver;
  throw Error(std::string("CAPSA_FUSE=") + std::getenv("CAPSA_FUSE") +
              ": unknown FUSE server (use builtin or squashfuse)");
}

namespace {

// Returns the process starting the FUSE server, when there is one.
Process start_mount(MountDriver driver, const SquashfsLocation& image, const std::string& target, bool wait,
                    FuseUsers users = FuseUsers::Mounter, int lone_start = -1) {
  switch (driver) {
    case MountDriver::KernelLoop:
      mount_with_loop_device(image, target);
      return {};
    case MountDriver::Builtin:
      return mount_with_builtin_server(image, target, wait, users, lone_start);
    case MountDriver::Squashfuse:
      return mount_with_squashfuse(image, target, wait, users);
  }
  return {};
}

}  // namespace

void mount_squashfs_with(MountDriver driver, const SquashfsLocation& image, const std::string& target) {
  start_mount(driver, image, target, true);
}

void await_image(ImageMount& mount, const SquashfsLocation& image, const std::string& target) {
  if (mount.driver == MountDriver::KernelLoop) return;
  await_server(image, target, mount.driver == MountDriver::Builtin ? "capsa" : "squashfuse_ll");
  mount.server_starter.wait();
}

ImageMount mount_squashfs(const SquashfsLocation& image, const std::string& target, bool privileged,
                          RootMountOptions root) {
  if (privileged && (!root.kernel_squashfs || !kernel_may_mount(image))) {
    MountDriver driver = unprivileged_driver();
    return {driver, start_mount(driver, image, target, false, FuseUsers::Everyone), {}};
  }
  if (privileged) {
    // Only capsa's own server inflates faster than the kernel (CAPSA_FUSE picks the
    // unprivileged one; root ignores it otherwise).
    if (root.lone_gzip_fuse && requested_driver() == MountDriver::Builtin) {
      if (UniqueFd lone = claim_lone_start(image)) {
        try {
          Process starter = start_mount(MountDriver::Builtin, image, target, false, FuseUsers::Everyone, lone.get());
          return {MountDriver::Builtin, std::move(starter), std::move(lone)};
        } catch (const Error& e) {
          // A machine without FUSE (no module, no /dev/fuse in a container) still has the
          // kernel's squashfs, which root used before; whatever was mounted goes first.
          log::debug(std::string("mounting the image with the kernel's squashfs instead of FUSE: ") + e.what());
          ::umount2(target.c_str(), MNT_DETACH);
        }
      }
    }
    try {
      mount_with_loop_device(image, target);
      return {};
    } catch (const NoLoopDevices& no_loop) {
      // Root without loop devices (a container, no loop module) can still use FUSE, as
      // Apptainer falls back to squashfuse; only when that fails too is it an error.
      MountDriver driver = unprivileged_driver();
      try {
        return {driver, start_mount(driver, image, target, true, FuseUsers::Everyone), {}};
      } catch (const Error& fuse) {
        throw Error(std::string("no way to mount the image: no loop device (") + no_loop.what() +
                    "), and FUSE failed too: " + fuse.what());
      }
    }
  }
  MountDriver driver = unprivileged_driver();
  return {driver, start_mount(driver, image, target, false), {}};
}

}  // namespace capsa::runtime
