#include "squashfs/zstd_decompressor.hpp"

#include <sqfs/compressor.h>
#include <sqfs/error.h>
#include <zstd.h>

#include <cstring>
#include <new>

namespace capsa::squashfs {
namespace {

// libsquashfs calls through the function pointers of `base` only, and destroys the
// object through base.base.destroy: `base` comes first so the two addresses are one.
struct ZstdDecompressor {
  sqfs_compressor_t base;
  ZSTD_DCtx* context;
  std::uint32_t block_size;
};

ZstdDecompressor* self(sqfs_compressor_t* compressor) { return reinterpret_cast<ZstdDecompressor*>(compressor); }
const ZstdDecompressor* self(const sqfs_compressor_t* compressor) {
  return reinterpret_cast<const ZstdDecompressor*>(compressor);
}

sqfs_object_t* create(std::uint32_t block_size);

void destroy(sqfs_object_t* object) {
  auto* decompressor = self(reinterpret_cast<sqfs_compressor_t*>(object));
  ZSTD_freeDCtx(decompressor->context);
  delete decompressor;
}

sqfs_object_t* copy(const sqfs_object_t* object) {
  return create(self(reinterpret_cast<const sqfs_compressor_t*>(object))->block_size);
}

void get_configuration(const sqfs_compressor_t* compressor, sqfs_compressor_config_t* config) {
  std::memset(config, 0, sizeof(*config));
  config->id = SQFS_COMP_ZSTD;
  config->flags = SQFS_COMP_FLAG_UNCOMPRESS;
  config->block_size = self(compressor)->block_size;
}

// A zstd image's options (the compression level) mean nothing to a reader.
int no_options(sqfs_compressor_t* /*compressor*/, sqfs_file_t* /*file*/) { return 0; }

sqfs_s32 decompress_block(sqfs_compressor_t* compressor, const sqfs_u8* in, sqfs_u32 size, sqfs_u8* out,
                          sqfs_u32 outsize) {
  if (outsize >= 0x7FFFFFFF) return SQFS_ERROR_ARG_INVALID;
  std::size_t n = ZSTD_decompressDCtx(self(compressor)->context, out, outsize, in, size);
  if (ZSTD_isError(n)) return SQFS_ERROR_COMPRESSOR;
  return static_cast<sqfs_s32>(n);
}

sqfs_object_t* create(std::uint32_t block_size) {
  auto* decompressor = new (std::nothrow) ZstdDecompressor{};
  if (!decompressor) return nullptr;
  decompressor->context = ZSTD_createDCtx();
  if (!decompressor->context) {
    delete decompressor;
    return nullptr;
  }
  decompressor->block_size = block_size;
  decompressor->base.base.destroy = destroy;
  decompressor->base.base.copy = copy;
  decompressor->base.get_configuration = get_configuration;
  decompressor->base.write_options = no_options;
  decompressor->base.read_options = no_options;
  decompressor->base.do_block = decompress_block;
  return &decompressor->base.base;
}

}  // namespace

CompressorPtr make_zstd_decompressor(std::uint32_t block_size) {
  sqfs_object_t* object = create(block_size);
  if (!object) throw std::bad_alloc();
  return CompressorPtr(reinterpret_cast<sqfs_compressor_t*>(object));
}

}  // namespace capsa::squashfs
