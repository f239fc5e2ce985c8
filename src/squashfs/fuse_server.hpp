#pragma once
// capsa's own FUSE server for a squashfs image that lies inside another file (the
// primary partition of a SIF): the unprivileged way to mount an image, in place of an
// external squashfuse_ll. libsquashfs (squashfs-tools-ng) decodes the super block,
// tables, inodes and directories; libfuse3's low-level API talks to the kernel from
// several threads at once.
//
// Why not squashfuse_ll: it is one more program to install, it serves one request at a
// time, and it exits on SIGINT/SIGTERM (libfuse's default handlers) while the container
// it serves may still be running. This server answers requests from a pool of threads
// that share an inode table, a directory table and a cache of decompressed blocks, and
// only ends when the kernel ends the connection (unmount) or the container it serves
// ends.

#include <cstdint>
#include <memory>
#include <string>

struct fuse_session;

namespace capsa {
class EndWatch;
}

namespace capsa::squashfs {

class Image;

class FuseImage {
 public:
  // Opens and checks the image at [offset, offset+size) of `path` (super block, id and
  // fragment tables, root inode). Throws FormatError/SystemError naming `path`, so that
  // a broken image is reported before anything is mounted.
  FuseImage(const std::string& path, std::uint64_t offset, std::uint64_t size);
  // The same for an image already opened (Reader::image(): what the run-time checks
  // opened), whose super block is not read again. Its file descriptor must stay open
  // while this serves (a forked server has its own copy).
  explicit FuseImage(std::shared_ptr<const Image> image);
  ~FuseImage();
  FuseImage(const FuseImage&) = delete;
  FuseImage& operator=(const FuseImage&) = delete;

  // Serves the image on `fuse_fd`, a /dev/fuse connection that is already mounted
  // (mount(2) with fd=N), until the kernel ends it. Returns the process exit status
  // to use (0 when the connection ended normally). Meant for a child process: it starts
  // threads, and it ignores the terminal and termination signals that reach the
  // container's process group. When `container` (the process it serves) ends first,
  // the process exits at once (request_threads.hpp), unlocking `end_lock` first.
  int serve(int fuse_fd, const EndWatch& container, int end_lock = -1);

  // A libfuse session over this image whose requests the caller feeds in itself
  // (fuse_session_custom_io, then fuse_session_process_buf for each), with no kernel
  // and no mount: how the tests and the fuzzer (tests/fuzz/fuzz_fuse_server.cpp) reach
  // the request handlers. Released with fuse_session_destroy; nullptr if libfuse fails.
  fuse_session* new_session();

  // Public only so that the request handlers (free functions libfuse calls) can name it.
  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace capsa::squashfs
