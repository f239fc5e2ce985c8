#pragma once
// A libsquashfs output file that is a window of an open fd starting at a byte offset:
// the squashfs image is written straight into a container file (the primary partition
// of a SIF) instead of into a file of its own that would then be copied. Offsets inside
// the image stay relative to its start, as the squashfs format requires.

#include <cstdint>

struct sqfs_file_t;

namespace capsa::convert {

// Returns a heap object released with sqfs_destroy; `fd` is borrowed and must outlive it.
// The image starts empty at `base_offset` (whatever lies beyond is overwritten).
sqfs_file_t* open_offset_file(int fd, std::uint64_t base_offset);

}  // namespace capsa::convert
