#pragma once
// A libsquashfs file (sqfs_file_t) over a window of a file descriptor it does not own:
// a squashfs image that lies inside another file (the primary partition of a SIF) at an
// offset. libsquashfs only ever sees offsets relative to the window, and every read is
// checked against the window's size, so nothing in an image can make it read outside.
// Reads are pread only: any number of threads may read through one window at once.
// Writing is the write side's business: convert/offset_file adds its own hooks.

#include <sqfs/io.h>

#include <atomic>
#include <cstdint>

namespace capsa::squashfs {

struct WindowFile {
  sqfs_file_t base;  // first member: libsquashfs hands &base back to the hooks
  int fd = -1;
  std::uint64_t offset = 0;        // where the window starts in fd
  std::uint64_t size = 0;          // bytes of the window
  std::atomic<int> read_errno{0};  // set when pread itself failed, for a SystemError
};

// Points `window` at [offset, offset+size) of `fd`, read-only: writes and truncation fail
// with SQFS_ERROR_UNSUPPORTED, copying is not offered, and destroying does nothing (the
// owner of `window` frees it).
void open_window(WindowFile& window, int fd, std::uint64_t offset, std::uint64_t size);

// The window's read hook (libsquashfs calls it through `base`; the FUSE server's block
// reads call it directly): 0, SQFS_ERROR_OUT_OF_BOUNDS for bytes outside the window or
// past the end of the file, SQFS_ERROR_IO when pread fails.
int read_window(sqfs_file_t* file, sqfs_u64 offset, void* buffer, size_t size);

// The WindowFile behind a sqfs_file_t made by open_window.
WindowFile& window_of(sqfs_file_t* file);

}  // namespace capsa::squashfs
