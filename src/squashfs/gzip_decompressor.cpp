#include "squashfs/gzip_decompressor.hpp"

#include <libdeflate.h>

#include "squashfs/block_decompressor.hpp"

namespace capsa::squashfs {
namespace {

struct Gzip {
  static constexpr SQFS_COMPRESSOR kId = SQFS_COMP_GZIP;
  using Context = libdeflate_decompressor;
  static Context* create() { return libdeflate_alloc_decompressor(); }
  static void destroy(Context* context) { libdeflate_free_decompressor(context); }
  // Squashfs's "gzip" blocks are zlib streams (header and Adler-32), as the kernel reads them.
  static sqfs_s32 decompress(Context* context, const sqfs_u8* in, sqfs_u32 size, sqfs_u8* out, sqfs_u32 outsize) {
    std::size_t produced = 0;
    if (libdeflate_zlib_decompress(context, in, size, out, outsize, &produced) != LIBDEFLATE_SUCCESS)
      return SQFS_ERROR_COMPRESSOR;
    return static_cast<sqfs_s32>(produced);
  }
};

}  // namespace

CompressorPtr make_gzip_decompressor(std::uint32_t block_size) { return BlockDecompressor<Gzip>::make(block_size); }

}  // namespace capsa::squashfs
