#pragma once
// Debian's FUSE file systems that serve an overlay unprivileged — fuse2fs for an ext3
// image, fuse-overlayfs where the kernel's overlayfs cannot be used — run inside the container's
// namespaces, started by capsa but no child of the container's command
// (util/detached_child.hpp). fuse2fs is built on libfuse 2, which cannot
// take a mounted /dev/fuse descriptor as capsa's own server does: the program mounts
// itself, with CAP_SYS_ADMIN of the container's user namespace (an ambient capability:
// it allows mounts in that namespace only, and nothing on the host). It runs in a
// session of its own (the terminal's and the job's signals are the container's) and
// gets SIGTERM when the container's process ends, so that it writes back what it holds
// and unmounts cleanly; its messages go to a log file in the session tmpfs and are shown
// only when it fails to mount.
#include <string>
#include <vector>

namespace capsa::runtime {

struct FuseProgram {
  std::string name;               // fuse2fs, fuse-overlayfs: looked up in PATH, then /usr/sbin:/sbin
  std::vector<std::string> args;  // after the program's name; the mount point is among them
  std::string mount_point;        // waited for: mounted when its device changes
  std::string log;                // the program's stderr
  int keep_fd = -1;               // a descriptor the program keeps across exec (an overlay lock)
};

// Starts the program and returns when its file system is mounted; throws Error (with
// the program's own message) when it exits or does not mount within 10 s.
void mount_with_fuse_program(const FuseProgram& program);

}  // namespace capsa::runtime
