#pragma once
// capsa's FUSE server for an ext2/ext3 overlay image, for unprivileged containers: the
// writable layer that the kernel's overlayfs stacks the container's root on.
//
// Why not Debian's fuse2fs: on the high-level libfuse API it resolves a full path from
// the root for every request, serves one request at a time anyway, and lacks what the
// kernel's overlayfs needs from a FUSE upper layer (d_type in readdir, RENAME_WHITEOUT),
// so fuse-overlayfs had to serve the container's root on top of it: writing 20,000 small
// files took 24.5x as long as root's kernel ext3 + overlayfs (docs/performance.md).
// This server speaks libfuse3's low-level API with inode numbers as node ids (no path
// walks), lists entry types, renames with RENAME_NOREPLACE/EXCHANGE/WHITEOUT, stores the
// user.overlay.* attributes, and lets the kernel cache writes (writeback cache) and
// attributes (it is the only writer). The file system work is ext3/volume.hpp.
//
// One thread serves requests: libext2fs is not thread-safe (a second one only waits for
// the end). The server ends when its connection ends (unmount), on SIGTERM, or when the
// container it serves has ended (util/detached_child.hpp), and then
// writes everything back and marks the file system clean. Killed, it leaves the file
// system marked in use, and e2fsck repairs it before its next use.
#include "ext3/volume.hpp"
#include "util/detached_child.hpp"

struct fuse_session;

namespace capsa::ext3 {

// Serves `volume` on `fuse_fd`, a /dev/fuse connection that is already mounted (mount(2)
// with fd=N), until the connection ends, SIGTERM comes or `container` (when given) has
// ended; then closes the volume (written back, clean). Returns the exit status for the
// server process. Meant for a child process: it ignores the terminal's signals and takes
// SIGTERM for itself.
//
// With `io_uring` (the default) and a kernel that offers it, requests come through FUSE
// over io_uring (ext3/fuse_uring.hpp); capsa's CAPSA_FUSE_URING=0 turns that off.
int serve(Volume& volume, int fuse_fd, const EndWatch* container = nullptr, bool io_uring = true);

}  // namespace capsa::ext3
