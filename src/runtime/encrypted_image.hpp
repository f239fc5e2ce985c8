#pragma once
// Running an encrypted SIF: the plain squashfs of a gocryptfs-encrypted partition
// (FsType 6, encryption/gocryptfs.hpp) as an open descriptor, which the rest of the run
// treats as any squashfs file (read for /etc/passwd, served by capsa's FUSE server or
// loop-mounted by root).
//
// A helper process, two forks away (util/detached_child.hpp), in a user and mount
// namespace of its own, mounts the partition's outer squashfs with capsa's FUSE server,
// runs gocryptfs over it read-only, opens the inner squashfs and hands the descriptor
// back over a socket. The descriptor reads through those mounts from any namespace,
// while nothing is mounted in the caller's or the host's. The helper lives until the
// container's command ends (its parent-death signal), gocryptfs with it (SIGTERM:
// it unmounts), and the mounts vanish with its namespace: nothing is left mounted or
// running, whether the run works, fails or is killed.
#include <cstdint>
#include <string>

#include "runtime/image_mount.hpp"
#include "util/fd.hpp"

namespace capsa::runtime {

struct DecryptedImage {
  UniqueFd fd;  // the plain squashfs, read-only
  std::uint64_t size = 0;
};

// `outer`: the partition (offset and size in the SIF); `secret`: gocryptfs' password;
// `work_dir`: an existing directory the helper mounts a tmpfs over in its own namespace.
// Throws Error in one line: wrong secret, damaged partition, gocryptfs missing.
DecryptedImage decrypt_gocryptfs_partition(const SquashfsLocation& outer, const std::string& secret,
                                           const std::string& work_dir, const std::string& image);

}  // namespace capsa::runtime
