#pragma once
// Mounting the squashfs partition of a SIF read-only, nosuid and nodev, at its offset in
// the file, without extracting anything:
//  * root: the kernel's squashfs driver through a loop device (auto-cleared: it goes
//    away with the last mount; shared by the containers of one image region on a node,
//    one superblock and page cache for all the ranks of a job: loop_device.hpp), or FUSE
//    as below when the machine has no loop devices, or for a gzip image that no other
//    container is using (lone_start.hpp);
//  * anyone else: FUSE. capsa, still holding its namespace capabilities, mounts
//    /dev/fuse itself and serves the connection from a forked child: no privilege and
//    no setuid fusermount. The server is capsa's own (squashfs/fuse_server.hpp) unless
//    CAPSA_FUSE=squashfuse picks squashfuse_ll, which gets the connection as /dev/fd/N
//    (libfuse >= 3.3). The server dies with the container (parent-death signal), and if
//    it dies first the connection aborts, so nothing ever hangs on a dead server.
#include <sys/stat.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "util/fd.hpp"
#include "util/process.hpp"

namespace capsa::squashfs {
class Image;
}

namespace capsa::runtime {

struct SquashfsLocation {
  std::string file;         // the SIF (or a bare .sqfs)
  std::uint64_t offset = 0;
  std::uint64_t size = 0;
  // The image as the run-time checks opened it (squashfs::Reader::image()), if they did:
  // capsa's FUSE server then serves it without opening and checking it again.
  std::shared_ptr<const squashfs::Image> opened{};
  // The file as the run-time checks opened it, or -1: a loop device is attached to this
  // very file, not to whatever the path names by then (execution control judged it).
  int fd = -1;
};

enum class MountDriver {
  KernelLoop,  // loop device + the kernel's squashfs (root only)
  Builtin,     // FUSE served by capsa's own multi-threaded server
  Squashfuse,  // FUSE served by squashfuse_ll
};

// The FUSE server $CAPSA_FUSE asks for: "builtin" (the default) or "squashfuse";
// nothing for any other value.
std::optional<MountDriver> requested_driver();
// The FUSE server for unprivileged mounts: requested_driver(), which must be one.
// Throws Error for any other value of $CAPSA_FUSE.
MountDriver unprivileged_driver();

// How root mounts an image (the site's choices; anyone else always uses FUSE).
// Whether no one but root can change the file `st` describes: root-owned, not writable by
// its group or others. Root gives only such files to the kernel's file system drivers
// (squashfs, ext3): a user who can write a file while the kernel has it mounted can feed
// the driver what it never expected, which is how kernel file system bugs are reached.
// Any other file root mounts goes through capsa's FUSE servers, which give up root
// (server_confinement.hpp).
bool only_root_writes(const struct stat& st);

struct RootMountOptions {
  bool kernel_squashfs = true;  // `allow kernel squashfs` (for files only root writes); no: FUSE, as for everyone else
  bool lone_gzip_fuse = false;  // `fuse for lone gzip images` (lone_start.hpp)
};

// An image mounted by mount_squashfs, whose FUSE server may still be starting.
struct ImageMount {
  MountDriver driver = MountDriver::KernelLoop;
  // The process that forks the server's watcher (util/detached_child.hpp), reaped by
  // await_image; it owns nothing for the kernel's squashfs.
  Process server_starter;
  // Root's lone-start lock (lone_start.hpp), shared with the FUSE server; closed at exec.
  UniqueFd lone_start;
};

// Mounts the image at `target` (an existing directory), choosing the driver from the
// caller's privileges. Throws SystemError/Error with what to do when neither works.
// An unprivileged mount returns while its FUSE server is still starting, so that the
// caller's own work overlaps with it: call await_image before using the mount.
ImageMount mount_squashfs(const SquashfsLocation& image, const std::string& target, bool privileged,
                          RootMountOptions root = {});

// Waits until the server of a FUSE mount answers; throws SystemError when it died.
void await_image(ImageMount& mount, const SquashfsLocation& image, const std::string& target);

// Mounts with the given driver (tests and benchmarks compare them). A FUSE driver needs
// CAP_SYS_ADMIN in the current mount namespace's user namespace.
void mount_squashfs_with(MountDriver driver, const SquashfsLocation& image, const std::string& target);

// Mounts a FUSE file system of type fuse.SOURCE at `target` with `flags` (MS_*), served
// through the returned /dev/fuse connection by whoever the caller hands it to; `options`
// are added to the mount's own (",default_permissions"). Needs CAP_SYS_ADMIN in the
// current mount namespace's user namespace; throws SystemError (what to do when
// /dev/fuse cannot be opened).
UniqueFd mount_fuse(const std::string& target, const char* source, unsigned long flags,
                    const std::string& options = "");

}  // namespace capsa::runtime
