#pragma once
// Execution control vouches for an image's bytes when it checks them (ecl/enforce.hpp),
// but a container reads those bytes as it runs. A caller who can write the image could
// change it once the check has passed and run what no administrator's key signed.
//
// A read lease on the run's own descriptor of the image closes that: the kernel grants one
// only while nobody has the file open for writing, and from then on any open for writing
// and any truncate of the file first breaks the lease, which signals the lease's owner,
// this process, and waits. The signal is SIGKILL: this process becomes the container's
// command, whose end ends its FUSE server and with it the mount, before the writer's open
// returns. So the container runs the bytes that were checked, or stops.
#include <string>

namespace capsa::runtime {

// Holds the image open on `fd` (read-only, the descriptor the run mounts) unchanged for as
// long as this process lives, when the caller could change it: a file of the caller's. A
// file the caller may write but does not own cannot be leased, and is refused; so is one
// that is open for writing now. Root is trusted (docs/security.md) and takes no lease.
// Throws Error naming `image`.
void hold_image_unchanged(int fd, const std::string& image);

}  // namespace capsa::runtime
