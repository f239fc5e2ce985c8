#pragma once
// Read-only, auto-clearing loop devices over a byte range of an image file, shared by
// every container of the same image: a device already mapping the same file (st_dev and
// st_ino), offset and size read-only is reused instead of allocating another, as
// Apptainer does with `shared loop devices` (LOOP_GET_STATUS64 scan). The device goes
// away by itself when its last user (a mount, or this object's descriptor) does.
#include <sys/stat.h>

#include <cstdint>
#include <string>

#include "util/error.hpp"
#include "util/fd.hpp"

namespace capsa::runtime {

struct LoopDevice {
  UniqueFd fd;        // keeps the device attached until the mount holds it
  std::string path;   // /dev/loopN
};

// The machine offers no loop device at all (no loop module, no /dev/loop-control inside
// a container): the caller may mount another way.
class NoLoopDevices : public SystemError {
 public:
  using SystemError::SystemError;
};

// `max loop devices` of the configuration: no device /dev/loopN with N >= `max` is
// attached; `why` names the setting in the error. Default: 256, Apptainer's.
void set_max_loop_devices(unsigned long max, const std::string& why);

// Finds or attaches a device for [offset, offset+size) of `backing_fd` (`file` names it
// in errors). A lock (/run/capsa/loop.lock) makes the scan and the attach one step, so
// that containers of one image started at the same moment still end up on one device.
LoopDevice attach_read_only_loop(int backing_fd, const std::string& file, std::uint64_t offset, std::uint64_t size);

// Whether a read-only device (capsa's, shared) maps [offset, offset+size) of the file
// `backing` describes: another container of the image has it mounted with the kernel.
bool read_only_loop_maps(const struct stat& backing, std::uint64_t offset, std::uint64_t size);

// A device of its own, read-write, for a writable ext3 overlay (never shared). Waits up to
// 5 s for a read-write device of the same file left by a container that just ended to
// clear (the kernel releases it after that container's mount namespace).
LoopDevice attach_writable_loop(int backing_fd, const std::string& file, std::uint64_t offset, std::uint64_t size);

}  // namespace capsa::runtime
