#pragma once
// --fusemount "host:PROGRAM ARGS... MOUNTPOINT" and "container:...": a FUSE file system
// served by a program the user names, mounted at MOUNTPOINT inside the container, as
// Apptainer does it: capsa opens /dev/fuse, mounts it there (fd=N), and runs the program
// with /dev/fd/N in place of the mount point (libfuse 3's convention), so that the
// program needs no right to mount. host: programs are the host's, run in a copy of the
// host's view; container: programs are the image's, run inside the container. Each is
// started two forks away (util/detached_child.hpp): no child of the container's command,
// it gets SIGTERM when the container's process ends.
#include <optional>
#include <string>
#include <vector>

#include "util/detached_child.hpp"
#include "util/fd.hpp"

namespace capsa::runtime {

struct FuseMountSpec {
  bool on_host = false;              // host: (else container:)
  std::vector<std::string> command;  // the program and its arguments, the mount point left out
  std::string mount_point;           // absolute, inside the container
};

// Parses --fusemount values; throws Error naming the one that is malformed.
std::vector<FuseMountSpec> parse_fusemounts(const std::vector<std::string>& values);

class FuseMounts {
 public:
  // On the host's view, in the container's namespaces, before its root is entered: opens
  // /dev/fuse for each and starts the host: programs (which wait for their mount).
  static FuseMounts prepare(const std::vector<FuseMountSpec>& specs);

  // In the container's root, with the right to mount: mounts each, starts the container:
  // programs, and returns once each file system answers (throws Error with the program's
  // own message when one ends first).
  void mount_all();

  bool empty() const { return mounts_.empty(); }

 private:
  struct Mount {
    FuseMountSpec spec;
    UniqueFd fuse;  // /dev/fuse, for the program
    UniqueFd log;   // the program's stderr (a memfd)
    UniqueFd go;    // host: programs start when this pipe is written
    std::optional<DetachedChild> server;
  };
  std::vector<Mount> mounts_;
};

}  // namespace capsa::runtime
