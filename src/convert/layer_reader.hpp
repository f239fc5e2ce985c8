#pragma once
// Reads one layer blob as a sequence of tar entries while hashing its uncompressed
// bytes (the layer's diff_id). Two libarchive readers are chained: the outer one only
// decompresses (gzip or zstd, detected from the magic bytes, or none) with the "raw"
// format, the inner one parses tar from the outer one's output. The chain exists so
// that the exact uncompressed byte stream, tar padding included, passes through our
// hash; libarchive offers no hook on a single reader's decompressed stream.

#include <archive.h>
#include <archive_entry.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "archive/archive_reader.hpp"
#include "convert/convert.hpp"
#include "oci/digest.hpp"
#include "util/fd.hpp"

namespace capsa::convert {

class LayerReader {
 public:
  // `label` names the layer in every error ("layer 3 (sha256:ab…)"). Reads input.path,
  // or only input.range of it.
  LayerReader(const LayerInput& input, std::string label);
  ~LayerReader();
  LayerReader(const LayerReader&) = delete;
  LayerReader& operator=(const LayerReader&) = delete;

  // The next tar entry, or nullptr at the end of the archive. The entry stays valid
  // until the next call. Data not read by read_data() is skipped.
  archive_entry* next();

  // Calls `sink(data, size, offset)` for each block of the current entry's contents;
  // `offset` jumps forward over holes of sparse files.
  template <typename Sink>
  void read_data(Sink&& sink) {
    for (;;) {
      const void* block = nullptr;
      std::size_t size = 0;
      la_int64_t offset = 0;
      int ret = archive_read_data_block(tar_.get(), &block, &size, &offset);
      if (ret == ARCHIVE_EOF) return;
      if (ret < ARCHIVE_WARN) fail("reading file data");
      sink(static_cast<const char*>(block), size, static_cast<std::uint64_t>(offset));
    }
  }

  // "sha256:<hex>" of the whole uncompressed stream; only after next() returned nullptr.
  std::string diff_id();

  // Bytes of the blob file consumed so far (compressed, as stored).
  std::uint64_t blob_bytes_read() const;

  // "sha256:<hex>" of the blob as stored, all of it (bytes the decompressor left unread
  // are read here); only after next() returned nullptr.
  std::string stored_digest();

  const std::string& label() const { return label_; }

 private:
  static la_ssize_t pull_decompressed(archive* tar, void* self, const void** buffer);
  static la_ssize_t read_stored(archive* stream, void* self, const void** buffer);
  std::size_t read_some(std::size_t max);
  [[noreturn]] void fail(const std::string& what) const;
  void drain_rest();

  std::string label_;
  ArchiveReader stream_;  // decompression only ("raw" format)
  ArchiveReader tar_;     // tar parsing, fed from stream_
  UniqueFd file_;
  std::uint64_t position_ = 0;  // next byte of the file to read
  std::uint64_t end_ = 0;       // one past the blob's last byte
  std::string buffer_;          // what read_stored hands libarchive
  // The blob's digest as stored, as it streams: only for a blob_digest to check (a
  // registry's blobs were checked as they downloaded; hashing them again costs a pass).
  std::optional<oci::Hasher> stored_;
  oci::Hasher diff_id_;  // sha256 of the uncompressed tar, as it streams
  std::string stream_error_;  // why stream_ failed, reported instead of tar_'s generic error
  bool at_end_ = false;
};

}  // namespace capsa::convert
