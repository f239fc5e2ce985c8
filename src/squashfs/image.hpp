#pragma once
// A squashfs 4.0 image inside a window of a file (image.sif's primary partition, at its
// offset), opened for reading: the super block read and checked, the decompressor's
// settings made. This is what capsa's two ways of reading an image share: the Reader
// (reader.hpp: files and listings without a mount) and the FUSE server (fuse_server.hpp)
// build their own cursors and caches on top. An Image never changes once opened, so one
// may be shared by threads (and the server reuses the one the run-time checks opened).

#include <sqfs/compressor.h>
#include <sqfs/super.h>

#include <cstdint>
#include <memory>
#include <string>

#include "squashfs/sqfs_handles.hpp"
#include "squashfs/window_file.hpp"
#include "util/error.hpp"
#include "util/fd.hpp"

namespace capsa::squashfs {

class Image {
 public:
  // Reads and checks the super block of [offset, offset+size) of `fd`, which stays the
  // caller's and must outlive the Image. `label` starts every error message, e.g.
  // "image.sif: primary partition". Throws FormatError when the bytes are not a squashfs
  // 4.0 image capsa can read (bad magic, truncated, unknown compressor).
  Image(int fd, std::uint64_t offset, std::uint64_t size, std::string label);
  // The same over a descriptor the Image keeps.
  Image(UniqueFd fd, std::uint64_t offset, std::uint64_t size, std::string label);
  Image(const Image&) = delete;
  Image& operator=(const Image&) = delete;

  const std::string& label() const { return label_; }
  const sqfs_super_t& super() const { return super_; }
  // The window as libsquashfs reads it. Its reads are pread only, safe from any thread.
  sqfs_file_t* file() const { return &window_.base; }

  // A decompressor for this image, its options read from the image. Each thread and each
  // meta data reader needs its own (they keep stream state). Throws FormatError when the
  // compressor is not supported or its options are corrupt.
  CompressorPtr make_decompressor() const;
  // Meta data readers over the inode and directory tables.
  MetaReaderPtr inode_table(sqfs_compressor_t* decompressor) const;
  MetaReaderPtr directory_table(sqfs_compressor_t* decompressor) const;

  // The inode at `ref` (block << 16 | offset in the inode table), read with `inodes`
  // (a reader from inode_table()). An inode that claims more than any real image needs
  // is refused before libsquashfs sizes memory from it (inode_bounds.hpp). `path` names
  // it in messages.
  InodePtr read_inode(sqfs_meta_reader_t* inodes, std::uint64_t ref, const std::string& path) const;

  // Throws for a libsquashfs error `code` met while reading `what`: SystemError when
  // pread itself failed, else ImageError ("label: what: reason").
  [[noreturn]] void fail(const std::string& what, int code) const;
  void check(int code, const std::string& what) const {
    if (code < 0) fail(what, code);
  }

 private:
  void open();

  UniqueFd owned_fd_;
  mutable WindowFile window_;  // libsquashfs takes it non-const; reading changes nothing
  sqfs_super_t super_{};
  sqfs_compressor_config_t decompressor_config_{};
  std::string label_;
};

// A FormatError from libsquashfs, with its error code (SQFS_ERROR_*): the FUSE server
// answers an allocation failure with ENOMEM, anything else with EIO.
class ImageError : public FormatError {
 public:
  ImageError(const std::string& message, int code) : FormatError(message), code_(code) {}
  int code() const { return code_; }

 private:
  int code_;
};

}  // namespace capsa::squashfs
