#pragma once
// `build --mksquashfs-args "ARGS"`: Apptainer hands ARGS to mksquashfs; capsa packs with
// libsquashfs itself (pack.hpp), so the mksquashfs options that say something its packer
// can do are read into PackOptions, and any other stops the build before it starts.
#include <string>

#include "convert/pack.hpp"

namespace capsa::convert {

// Applies ARGS (whitespace-separated, as mksquashfs's command line) to `options`:
//   -comp gzip|xz|zstd        compression
//   -b, -block-size SIZE      block size: bytes, or with K or M; a power of two, 4K..1M
//   -Xcompression-level N     level (gzip 1..9, zstd 1..22)
//   -processors N             compression threads
//   -all-root, -root-owned    every entry owned by root
//   -force-uid N, -force-gid N
//   -noappend, -no-xattrs, -mem SIZE, -quiet, -no-progress, -progress: nothing to change
//   (capsa always writes a new image, never records xattrs, and streams its input).
// Throws Error "--mksquashfs-args: ..." naming an option it cannot honour, or a bad value.
void apply_mksquashfs_args(const std::string& args, PackOptions& options);

}  // namespace capsa::convert
