#include "squashfs/zstd_decompressor.hpp"

#include <zstd.h>

#include "squashfs/block_decompressor.hpp"

namespace capsa::squashfs {
namespace {

struct Zstd {
  static constexpr SQFS_COMPRESSOR kId = SQFS_COMP_ZSTD;
  using Context = ZSTD_DCtx;
  static Context* create() { return ZSTD_createDCtx(); }
  static void destroy(Context* context) { ZSTD_freeDCtx(context); }
  static sqfs_s32 decompress(Context* context, const sqfs_u8* in, sqfs_u32 size, sqfs_u8* out, sqfs_u32 outsize) {
    std::size_t n = ZSTD_decompressDCtx(context, out, outsize, in, size);
    if (ZSTD_isError(n)) return SQFS_ERROR_COMPRESSOR;
    return static_cast<sqfs_s32>(n);
  }
};

}  // namespace

CompressorPtr make_zstd_decompressor(std::uint32_t block_size) { return BlockDecompressor<Zstd>::make(block_size); }

}  // namespace capsa::squashfs
