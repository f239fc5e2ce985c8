#pragma once
// Writes a squashfs image with libsquashfs (squashfs-tools-ng): file data streams
// through the multithreaded block processor as it is read, then the inode,
// directory, fragment and id tables are written from the MergeTree.

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>

#include "convert/convert.hpp"
#include "convert/merge_tree.hpp"

struct sqfs_file_t;
struct sqfs_compressor_t;
struct sqfs_block_writer_t;
struct sqfs_frag_table_t;
struct sqfs_block_processor_t;
struct sqfs_id_table_t;

namespace capsa::convert {

struct ImageCounts {
  std::uint64_t inodes = 0;
  std::uint64_t files = 0;
  std::uint64_t bytes = 0;
};

// The compression threads a writer uses: `requested` (ConvertOptions::workers), or with 0
// the CPUs this process may run on; at most the configuration's `mksquashfs procs`.
unsigned compression_workers(unsigned requested);

class SquashfsWriter {
 public:
  // Releases any libsquashfs object (sqfs_destroy).
  struct DestroyObject {
    void operator()(void* object) const;
  };

  // Truncates and writes `path`, which also names the output in errors.
  SquashfsWriter(const std::string& path, const ConvertOptions& options);
  // Writes the image into `fd` (borrowed) from byte `offset` on; `label` names it in errors.
  SquashfsWriter(int fd, std::uint64_t offset, const std::string& label, const ConvertOptions& options);
  ~SquashfsWriter();
  SquashfsWriter(const SquashfsWriter&) = delete;
  SquashfsWriter& operator=(const SquashfsWriter&) = delete;

  // One regular file's data: begin, append (zeros for sparse holes), end. The
  // returned slot receives the file's inode, owned by this writer.
  sqfs_inode_generic_t** begin_file();
  void append(const void* data, std::size_t size);
  void append_zeros(std::uint64_t count);
  void end_file();

  // Waits for the compressors, then writes every table and the super block.
  // `mtime_limit` clamps every time stamp (SOURCE_DATE_EPOCH).
  ImageCounts finish(Node& root, std::optional<std::int64_t> mtime_limit);

 private:
  struct Libsquashfs;
  void check(int code, const char* what) const;
  std::unique_ptr<sqfs_compressor_t, DestroyObject> create_compressor(const ConvertOptions& options,
                                                                      bool uncompress) const;
  void start(const ConvertOptions& options);  // once the output file is open
  void start_processor(unsigned workers);

  std::string path_;
  std::unique_ptr<Libsquashfs> sq_;
  bool file_open_ = false;
  std::deque<sqfs_inode_generic_t*> file_inodes_;  // stable addresses for the block processor
};

}  // namespace capsa::convert
