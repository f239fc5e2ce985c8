#pragma once
// Root and gzip images. The distributions' kernels inflate a squashfs with one
// decompressor per mount (CONFIG_SQUASHFS_DECOMP_SINGLE), at about user-space zlib's
// speed, while capsa's FUSE server inflates with libdeflate on several threads: a start
// on its own is faster through FUSE (docs/performance.md, session 21). But the kernel
// hands every later mount of the image the first one's superblock and pages (the loop
// device is shared: loop_device.hpp), which the ranks of a job, started together on a
// node, gain from and would lose with a FUSE server each. So root serves a gzip image
// through FUSE only when no other container on the node is using it: none holds its
// lone-start lock and no loop device maps it. Every start beside a running container
// mounts with the kernel, as all did before (`fuse for lone gzip images = no` in
// capsa.conf: always).
#include "util/fd.hpp"

namespace capsa::runtime {

struct SquashfsLocation;

// The image's lone-start lock (flock, exclusive), held by the returned descriptor: the
// FUSE server forked after this inherits it, so the lock lasts as long as that server.
// Empty when the image is not gzip, when another container uses the image, or when the
// lock cannot be had (no /run/capsa): the caller then mounts with the kernel.
UniqueFd claim_lone_start(const SquashfsLocation& image);

}  // namespace capsa::runtime
