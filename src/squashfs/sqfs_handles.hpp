#pragma once
// Ownership of libsquashfs objects for unique_ptr: objects are released through their own
// destroy hook, buffers the library returns (inodes, directory entries) through sqfs_free.
#include <sqfs/inode.h>
#include <sqfs/predef.h>

#include <memory>

namespace capsa::squashfs {

struct DestroyObject {
  void operator()(void* object) const { sqfs_destroy(object); }
};
struct FreeBuffer {
  void operator()(void* buffer) const { sqfs_free(buffer); }
};
using InodePtr = std::unique_ptr<sqfs_inode_generic_t, FreeBuffer>;
using CompressorPtr = std::unique_ptr<sqfs_compressor_t, DestroyObject>;
using MetaReaderPtr = std::unique_ptr<sqfs_meta_reader_t, DestroyObject>;

}  // namespace capsa::squashfs
