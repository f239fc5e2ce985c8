#pragma once
// What capsa's own block decompressors (gzip_decompressor.hpp, zstd_decompressor.hpp)
// share: libsquashfs's decompressor interface (sqfs_compressor_t) around one reusable
// context of a codec. A Codec provides
//   static constexpr SQFS_COMPRESSOR kId;          the image's compressor it reads
//   using Context = ...;                           the codec's decompression state
//   static Context* create();                      nullptr when out of memory
//   static void destroy(Context*);
//   static sqfs_s32 decompress(Context*, const sqfs_u8* in, sqfs_u32 size,
//                              sqfs_u8* out, sqfs_u32 outsize);   bytes made, or an SQFS_ERROR_*
#include <sqfs/compressor.h>
#include <sqfs/error.h>

#include <cstdint>
#include <cstring>
#include <new>

#include "squashfs/sqfs_handles.hpp"

namespace capsa::squashfs {

template <typename Codec>
class BlockDecompressor {
 public:
  // Like libsquashfs's own, the object is for one thread at a time.
  static CompressorPtr make(std::uint32_t block_size) {
    sqfs_object_t* object = create(block_size);
    if (!object) throw std::bad_alloc();
    return CompressorPtr(reinterpret_cast<sqfs_compressor_t*>(object));
  }

 private:
  // libsquashfs calls through the function pointers of `base` only, and destroys the
  // object through base.base.destroy: `base` comes first so the two addresses are one.
  struct Object {
    sqfs_compressor_t base;
    typename Codec::Context* context;
    std::uint32_t block_size;
  };

  static Object* self(sqfs_compressor_t* compressor) { return reinterpret_cast<Object*>(compressor); }
  static const Object* self(const sqfs_compressor_t* compressor) { return reinterpret_cast<const Object*>(compressor); }

  static sqfs_object_t* create(std::uint32_t block_size) {
    auto* object = new (std::nothrow) Object{};
    if (!object) return nullptr;
    object->context = Codec::create();
    if (!object->context) {
      delete object;
      return nullptr;
    }
    object->block_size = block_size;
    object->base.base.destroy = destroy;
    object->base.base.copy = copy;
    object->base.get_configuration = get_configuration;
    object->base.write_options = no_options;
    object->base.read_options = no_options;
    object->base.do_block = decompress_block;
    return &object->base.base;
  }

  static void destroy(sqfs_object_t* base) {
    Object* object = self(reinterpret_cast<sqfs_compressor_t*>(base));
    Codec::destroy(object->context);
    delete object;
  }

  static sqfs_object_t* copy(const sqfs_object_t* base) {
    return create(self(reinterpret_cast<const sqfs_compressor_t*>(base))->block_size);
  }

  static void get_configuration(const sqfs_compressor_t* compressor, sqfs_compressor_config_t* config) {
    std::memset(config, 0, sizeof(*config));
    config->id = Codec::kId;
    config->flags = SQFS_COMP_FLAG_UNCOMPRESS;
    config->block_size = self(compressor)->block_size;
  }

  // An image's compressor options (level, window...) shape only how it was compressed.
  static int no_options(sqfs_compressor_t* /*compressor*/, sqfs_file_t* /*file*/) { return 0; }

  static sqfs_s32 decompress_block(sqfs_compressor_t* compressor, const sqfs_u8* in, sqfs_u32 size, sqfs_u8* out,
                                   sqfs_u32 outsize) {
    if (outsize >= 0x7FFFFFFF) return SQFS_ERROR_ARG_INVALID;
    return Codec::decompress(self(compressor)->context, in, size, out, outsize);
  }
};

}  // namespace capsa::squashfs
