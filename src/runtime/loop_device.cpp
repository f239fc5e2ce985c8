#include "runtime/loop_device.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <linux/loop.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

#include "runtime/node_lock.hpp"
#include "util/error.hpp"

namespace capsa::runtime {
namespace {

// Generous: a job's ranks starting together contend only through the lock, but other
// tools (losetup, mount -o loop) may take a device between GET_FREE and CONFIGURE.
constexpr int kAttachAttempts = 64;

// Held while scanning and attaching. Without /run (a minimal chroot) there is no lock:
// concurrent starts may then attach a device each, which is wasteful but correct.
UniqueFd lock_loop_setup() {
  UniqueFd lock = open_node_lock("loop.lock");
  if (!lock) return lock;
  while (::flock(lock.get(), LOCK_EX) != 0)
    if (errno != EINTR) return UniqueFd();
  return lock;
}

bool maps(const loop_info64& info, const struct stat& backing, std::uint64_t offset, std::uint64_t size) {
  return info.lo_device == static_cast<__u64>(backing.st_dev) && info.lo_inode == static_cast<__u64>(backing.st_ino) &&
         info.lo_offset == offset && info.lo_sizelimit == size && (info.lo_flags & LO_FLAGS_READ_ONLY) != 0;
}

// The loop devices that have a backing file. /proc/partitions lists exactly those (a
// detached device has no size and is left out): one read, where probing each of
// /sys/block/loop*/loop costs a path walk per device ever created on the machine
// (0.2 ms per container start on a node with 64).
std::vector<std::string> attached_loop_devices() {
  std::vector<std::string> names;
  if (std::FILE* partitions = std::fopen("/proc/partitions", "re")) {
    char line[256];
    while (std::fgets(line, sizeof line, partitions)) {
      unsigned major = 0, minor = 0;
      unsigned long long blocks = 0;
      char name[64];
      if (std::sscanf(line, "%u %u %llu %63s", &major, &minor, &blocks, name) == 4 && blocks > 0 &&
          std::strncmp(name, "loop", 4) == 0)
        names.push_back(name);
    }
    std::fclose(partitions);
    return names;
  }
  if (DIR* dir = ::opendir("/sys/block")) {  // no /proc/partitions: only attached devices have a loop/ folder
    while (dirent* entry = ::readdir(dir)) {
      std::string name = entry->d_name;
      if (name.rfind("loop", 0) == 0 && ::access(("/sys/block/" + name + "/loop").c_str(), F_OK) == 0)
        names.push_back(name);
    }
    ::closedir(dir);
  }
  return names;
}

// A device that already maps the range, opened (the open keeps it from auto-clearing
// before the mount takes it), or an empty LoopDevice.
LoopDevice find_shared(const struct stat& backing, std::uint64_t offset, std::uint64_t size) {
  LoopDevice found;
  for (const std::string& name : attached_loop_devices()) {
    std::string path = "/dev/" + name;
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd) continue;
    loop_info64 info{};
    if (::ioctl(fd.get(), LOOP_GET_STATUS64, &info) != 0) continue;  // ENXIO: not attached
    if (!maps(info, backing, offset, size)) continue;
    found.fd = std::move(fd);
    found.path = path;
    break;
  }
  return found;
}

// `max loop devices` (set_max_loop_devices): a process-wide setting, as the
// configuration is, rather than a parameter of every attach.
unsigned long max_loop_devices = 256;
std::string max_loop_devices_why;

[[noreturn]] void refuse_beyond_limit(const std::string& file, int number) {
  throw Error("no loop device for " + file + ": the first free one, /dev/loop" + std::to_string(number) +
              ", is beyond the " + std::to_string(max_loop_devices) + " capsa may use " + max_loop_devices_why);
}

LoopDevice attach_new(int backing_fd, const std::string& file, std::uint64_t offset, std::uint64_t size,
                      bool read_only = true) {
  UniqueFd control(::open("/dev/loop-control", O_RDWR | O_CLOEXEC));
  if (!control) throw NoLoopDevices("opening /dev/loop-control", errno);
  // Another process (not capsa, so not under the lock) may take the free device between
  // GET_FREE and CONFIGURE: try the next one.
  for (int attempt = 0; attempt < kAttachAttempts; ++attempt) {
    int number = ::ioctl(control.get(), LOOP_CTL_GET_FREE);
    if (number < 0) {
      if (errno == ENOTTY || errno == ENODEV || errno == EPERM || errno == EACCES)
        throw NoLoopDevices("asking /dev/loop-control for a free loop device", errno);
      throw_errno("finding a free loop device");
    }
    if (static_cast<unsigned long>(number) >= max_loop_devices) refuse_beyond_limit(file, number);
    LoopDevice device;
    device.path = "/dev/loop" + std::to_string(number);
    device.fd.reset(::open(device.path.c_str(), (read_only ? O_RDONLY : O_RDWR) | O_CLOEXEC));
    if (!device.fd) {
      if (errno == ENOENT || errno == EACCES || errno == EPERM) throw NoLoopDevices("opening " + device.path, errno);
      throw_errno("opening " + device.path);
    }
    loop_config config{};
    config.fd = static_cast<__u32>(backing_fd);
    config.info.lo_offset = offset;
    config.info.lo_sizelimit = size;
    // Auto-clear: the device is released when its last user (the mount) goes away.
    config.info.lo_flags = (read_only ? LO_FLAGS_READ_ONLY : 0) | LO_FLAGS_AUTOCLEAR;
    if (::ioctl(device.fd.get(), LOOP_CONFIGURE, &config) == 0) return device;
    if (errno != EBUSY) throw_errno("configuring " + device.path + " for " + file);
    ::usleep(static_cast<useconds_t>(1000 * (1 + attempt % 8)));  // someone else's: let them finish
  }
  throw Error("no free loop device for " + file + " after " + std::to_string(kAttachAttempts) + " attempts");
}

// Whether a writable device still maps the file: the last container's, torn down by the
// kernel after its mount namespace went away.
bool writable_device_maps(const struct stat& backing, std::uint64_t offset) {
  for (const std::string& name : attached_loop_devices()) {
    UniqueFd fd(::open(("/dev/" + name).c_str(), O_RDONLY | O_CLOEXEC));
    loop_info64 info{};
    if (fd && ::ioctl(fd.get(), LOOP_GET_STATUS64, &info) == 0 && (info.lo_flags & LO_FLAGS_READ_ONLY) == 0 &&
        info.lo_device == static_cast<__u64>(backing.st_dev) && info.lo_inode == static_cast<__u64>(backing.st_ino) &&
        info.lo_offset == offset)
      return true;
  }
  return false;
}

}  // namespace

void set_max_loop_devices(unsigned long max, const std::string& why) {
  max_loop_devices = max;
  max_loop_devices_why = why;
}

LoopDevice attach_writable_loop(int backing_fd, const std::string& file, std::uint64_t offset, std::uint64_t size) {
  struct stat backing {};
  if (::fstat(backing_fd, &backing) != 0) throw_errno(file);
  // Two read-write mounts of one ext3 corrupt it: wait (a while) for the previous
  // writer's device to clear before attaching another.
  for (int waited = 0; writable_device_maps(backing, offset); ++waited) {
    if (waited == 500)
      throw Error(file + " is still attached read-write to a loop device (by a container that ended?)");
    ::usleep(10000);
  }
  UniqueFd lock = lock_loop_setup();
  return attach_new(backing_fd, file, offset, size, false);
}

bool read_only_loop_maps(const struct stat& backing, std::uint64_t offset, std::uint64_t size) {
  return static_cast<bool>(find_shared(backing, offset, size).fd);
}

LoopDevice attach_read_only_loop(int backing_fd, const std::string& file, std::uint64_t offset, std::uint64_t size) {
  struct stat backing {};
  if (::fstat(backing_fd, &backing) != 0) throw_errno(file);
  UniqueFd lock = lock_loop_setup();
  LoopDevice shared = find_shared(backing, offset, size);
  if (shared.fd) return shared;
  return attach_new(backing_fd, file, offset, size);
}

}  // namespace capsa::runtime
