#pragma once
// Mounting the squashfs partition of a SIF read-only, nosuid and nodev, at its offset in
// the file, without extracting anything:
//  * root: the kernel's squashfs driver through a loop device (auto-cleared: it goes
//    away with the last mount; shared by the containers of one image region on a node,
//    one superblock and page cache for all the ranks of a job: loop_device.hpp), or FUSE
//    as below when the machine has no loop devices;
//  * anyone else: FUSE. capsa, still holding its namespace capabilities, mounts
//    /dev/fuse itself and hands the connection to squashfuse_ll as /dev/fd/N (libfuse
//    >= 3.3): squashfuse needs no privilege and no setuid fusermount. The server dies
//    with the container (parent-death signal), and if it dies first the connection
//    aborts, so nothing ever hangs on a dead server.
#include <cstdint>
#include <string>

namespace capsa::runtime {

struct SquashfsLocation {
  std::string file;         // the SIF (or a bare .sqfs)
  std::uint64_t offset = 0;
  std::uint64_t size = 0;
};

enum class MountDriver { KernelLoop, Fuse };

// Mounts the image at `target` (an existing directory), choosing the driver from the
// caller's privileges. Throws SystemError/Error with what to do when neither works.
MountDriver mount_squashfs(const SquashfsLocation& image, const std::string& target, bool privileged);

}  // namespace capsa::runtime
