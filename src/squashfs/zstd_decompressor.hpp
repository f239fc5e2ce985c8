#pragma once
// A zstd block decompressor for libsquashfs's readers that keeps its decompression
// context. libsquashfs 1.2's own calls ZSTD_decompress() for every block, which creates
// and frees a context each time: about 100 KiB allocated, cleared and faulted in per
// block, a fifth of the FUSE server's CPU time on a container start from a zstd image
// (perf, bench/start.sh). It also creates a compression context nobody uses.
#include <cstdint>

#include "squashfs/sqfs_handles.hpp"

namespace capsa::squashfs {

// A decompressor object with libsquashfs's interface (sqfs_compressor_t), usable
// wherever libsquashfs takes one; like libsquashfs's, one thread at a time.
CompressorPtr make_zstd_decompressor(std::uint32_t block_size);

}  // namespace capsa::squashfs
