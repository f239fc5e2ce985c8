#pragma once
// A directory tree -> a squashfs image: sandbox -> SIF. The tree is walked relative to
// directory fds without following symlinks, then written with the converter's
// libsquashfs writer (convert/squashfs_writer: multithreaded block processor). The image
// is deterministic: entries sorted bytewise, inode numbers in tree order, the image time
// and mtimes clamped by SOURCE_DATE_EPOCH when set.
// Kept: directories, regular files, symlinks, hard links, fifos, permission bits with
// setuid/setgid/sticky, mtimes, owners (mapped below). Skipped with a warning on stderr:
// device nodes and sockets (squashfs writer support for them is not needed for builds),
// extended attributes are not recorded.

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>

namespace capsa::convert {

struct PackOptions {
  std::string compression = "zstd";     // zstd, gzip or xz, as the pull's --compression
  std::optional<uid_t> owner_as_root;   // files owned by this host uid/gid are recorded as 0 (fakeroot builds)
  std::optional<gid_t> group_as_root;
  unsigned threads = 0;                 // 0 = all cores this process may use
  std::optional<int> level;             // compression level; unset: the converter's default
  std::uint32_t block_size = 128 * 1024;  // power of two, 4 KiB .. 1 MiB
  // Every entry recorded with this owner / group (mksquashfs -all-root, -force-uid/gid).
  std::optional<std::uint32_t> force_uid;
  std::optional<std::uint32_t> force_gid;
  // The subordinate ranges of a fakeroot_subid build packed from outside its user
  // namespace: on-disk ids subuid_start .. subuid_start+subuid_count-1 are recorded as
  // 1 .. subuid_count (same for gids). Inside the namespace
  // (runtime::run_in_user_namespace) ids are already the container's: leave these unset.
  std::optional<std::uint32_t> subuid_start;
  std::uint32_t subuid_count = 0;
  std::optional<std::uint32_t> subgid_start;
  std::uint32_t subgid_count = 0;
};

// Writes the squashfs image of `directory` to fd at offset (as the pull writes into a SIF
// partition slot: see src/convert/offset_file.* and src/image/pulled_sif.cpp); returns the
// number of bytes written. Throws Error for an unknown compression, SystemError for I/O
// failures (an unreadable file names its path).
std::uint64_t pack_directory(const std::string& directory, int fd, std::uint64_t offset, const PackOptions& options);

}  // namespace capsa::convert
