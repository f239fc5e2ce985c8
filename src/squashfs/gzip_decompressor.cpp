#include "squashfs/gzip_decompressor.hpp"

#include <libdeflate.h>
#include <sqfs/compressor.h>
#include <sqfs/error.h>

#include <cstring>
#include <new>

namespace capsa::squashfs {
namespace {

// libsquashfs calls through the function pointers of `base` only, and destroys the
// object through base.base.destroy: `base` comes first so the two addresses are one.
struct GzipDecompressor {
  sqfs_compressor_t base;
  libdeflate_decompressor* inflater;
  std::uint32_t block_size;
};

GzipDecompressor* self(sqfs_compressor_t* compressor) { return reinterpret_cast<GzipDecompressor*>(compressor); }
const GzipDecompressor* self(const sqfs_compressor_t* compressor) {
  return reinterpret_cast<const GzipDecompressor*>(compressor);
}

sqfs_object_t* create(std::uint32_t block_size);

void destroy(sqfs_object_t* object) {
  auto* decompressor = self(reinterpret_cast<sqfs_compressor_t*>(object));
  libdeflate_free_decompressor(decompressor->inflater);
  delete decompressor;
}

sqfs_object_t* copy(const sqfs_object_t* object) {
  return create(self(reinterpret_cast<const sqfs_compressor_t*>(object))->block_size);
}

void get_configuration(const sqfs_compressor_t* compressor, sqfs_compressor_config_t* config) {
  std::memset(config, 0, sizeof(*config));
  config->id = SQFS_COMP_GZIP;
  config->flags = SQFS_COMP_FLAG_UNCOMPRESS;
  config->block_size = self(compressor)->block_size;
}

// A gzip image's options (level, window, strategies) shape only how it was compressed.
int no_options(sqfs_compressor_t* /*compressor*/, sqfs_file_t* /*file*/) { return 0; }

// Squashfs's "gzip" blocks are zlib streams (header and Adler-32), as the kernel reads them.
sqfs_s32 decompress_block(sqfs_compressor_t* compressor, const sqfs_u8* in, sqfs_u32 size, sqfs_u8* out,
                          sqfs_u32 outsize) {
  if (outsize >= 0x7FFFFFFF) return SQFS_ERROR_ARG_INVALID;
  std::size_t produced = 0;
  if (libdeflate_zlib_decompress(self(compressor)->inflater, in, size, out, outsize, &produced) != LIBDEFLATE_SUCCESS)
    return SQFS_ERROR_COMPRESSOR;
  return static_cast<sqfs_s32>(produced);
}

sqfs_object_t* create(std::uint32_t block_size) {
  auto* decompressor = new (std::nothrow) GzipDecompressor{};
  if (!decompressor) return nullptr;
  decompressor->inflater = libdeflate_alloc_decompressor();
  if (!decompressor->inflater) {
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

CompressorPtr make_gzip_decompressor(std::uint32_t block_size) {
  sqfs_object_t* object = create(block_size);
  if (!object) throw std::bad_alloc();
  return CompressorPtr(reinterpret_cast<sqfs_compressor_t*>(object));
}

}  // namespace capsa::squashfs
