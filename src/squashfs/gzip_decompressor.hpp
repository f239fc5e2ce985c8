#pragma once
// A gzip block decompressor for libsquashfs's readers, with libdeflate instead of the
// zlib stream libsquashfs 1.2 uses. A squashfs block is one whole zlib stream of known
// largest size, the case libdeflate is made for: it inflates busybox's nine 128 KiB
// blocks in 3.7 ms against zlib's 7.6 ms on the VM measured (docs/performance.md), and
// most images users run are gzip (mksquashfs's and Apptainer's default).
#include <cstdint>

#include "squashfs/sqfs_handles.hpp"

namespace capsa::squashfs {

// A decompressor object with libsquashfs's interface (sqfs_compressor_t), usable
// wherever libsquashfs takes one; like libsquashfs's, one thread at a time.
CompressorPtr make_gzip_decompressor(std::uint32_t block_size);

}  // namespace capsa::squashfs
