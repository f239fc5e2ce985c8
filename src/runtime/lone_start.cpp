#include "runtime/lone_start.hpp"

#include <endian.h>
#include <fcntl.h>
#include <sqfs/super.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>

#include "runtime/image_mount.hpp"
#include "runtime/loop_device.hpp"
#include "runtime/node_lock.hpp"
#include "squashfs/image.hpp"
#include "util/fnv1a.hpp"

namespace capsa::runtime {
namespace {

// One lock per bucket of images, not per image: a fixed set of files, nothing left
// behind per image run. Two images in one bucket at once only send the second to the
// kernel's squashfs.
constexpr unsigned kBuckets = 64;

bool is_gzip(const SquashfsLocation& image, int fd) {
  if (image.opened) return image.opened->super().compression_id == SQFS_COMP_GZIP;
  std::uint16_t id = 0;  // the super block's compression_id, little-endian, at byte 20
  const auto at = static_cast<off_t>(image.offset + 20);
  return ::pread(fd, &id, sizeof id, at) == static_cast<ssize_t>(sizeof id) && le16toh(id) == SQFS_COMP_GZIP;
}

unsigned bucket_of(const struct stat& file, std::uint64_t offset) {
  const std::uint64_t key = Fnv1a()
                                .add(static_cast<std::uint64_t>(file.st_dev))
                                .add(static_cast<std::uint64_t>(file.st_ino))
                                .add(offset)
                                .value();
  return static_cast<unsigned>(key % kBuckets);
}

}  // namespace

UniqueFd claim_lone_start(const SquashfsLocation& image) {
  // The file as the checks opened it (the FUSE server serves that one too), else by name.
  UniqueFd opened_here;
  int fd = image.fd;
  if (fd < 0) {
    opened_here.reset(::open(image.file.c_str(), O_RDONLY | O_CLOEXEC));
    fd = opened_here.get();
  }
  struct stat st {};
  if (fd < 0 || ::fstat(fd, &st) != 0 || !is_gzip(image, fd)) return {};
  char name[32];
  std::snprintf(name, sizeof name, "lone-%02u.lock", bucket_of(st, image.offset));
  UniqueFd lock = open_node_lock(name);
  // Held: another container's FUSE server serves an image of this bucket.
  if (!lock || ::flock(lock.get(), LOCK_EX | LOCK_NB) != 0) return {};
  // Mounted by the kernel for a container still running: share its pages.
  if (read_only_loop_maps(st, image.offset, image.size)) return {};
  return lock;
}

}  // namespace capsa::runtime
