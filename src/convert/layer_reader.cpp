#include "convert/layer_reader.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <new>

#include "util/error.hpp"

namespace capsa::convert {
namespace {

constexpr std::size_t kReadBlock = 1 << 20;

}  // namespace

LayerReader::LayerReader(const LayerInput& input, std::string label)
    : label_(std::move(label)),
      stream_(new_archive_reader()),
      tar_(new_archive_reader()),
      stored_(input.blob_digest ? std::optional<oci::Hasher>(std::in_place,
                                                             input.blob_digest->substr(0, input.blob_digest->find(':')))
                                : std::nullopt) {
  file_ = UniqueFd(::open(input.path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!file_) throw SystemError(label_ + ": opening " + input.path, errno);
  if (input.range) {
    position_ = input.range->offset;
    end_ = input.range->offset + input.range->length;
  } else {
    struct stat st {};
    if (::fstat(file_.get(), &st) != 0) throw SystemError(label_ + ": " + input.path, errno);
    end_ = static_cast<std::uint64_t>(st.st_size);
  }
  // Only the two compressions OCI defines. archive_read_support_filter_all would also
  // enable filters that run external programs (lrzip, lzop, grzip) on untrusted data.
  archive_read_support_filter_gzip(stream_.get());
  archive_read_support_filter_zstd(stream_.get());
  archive_read_support_format_raw(stream_.get());
  // Our own reader rather than archive_read_open_filename: it reads a byte range, and
  // hashes the stored bytes (the blob digest) as they pass.
  if (archive_read_open(stream_.get(), this, nullptr, &LayerReader::read_stored, nullptr) != ARCHIVE_OK) {
    const char* message = archive_error_string(stream_.get());
    throw FormatError(label_ + ": " + (message ? message : "cannot read the blob"));
  }
  archive_entry* raw = nullptr;
  if (archive_read_next_header(stream_.get(), &raw) != ARCHIVE_OK) {
    const char* message = archive_error_string(stream_.get());
    throw FormatError(label_ + ": " + (message ? message : "empty or unreadable blob"));
  }
  archive_read_support_format_tar(tar_.get());
  archive_read_support_format_empty(tar_.get());
  if (archive_read_open(tar_.get(), this, nullptr, &LayerReader::pull_decompressed, nullptr) != ARCHIVE_OK)
    fail("opening the tar stream");
}

LayerReader::~LayerReader() = default;

std::size_t LayerReader::read_some(std::size_t max) {
  const std::uint64_t left = end_ - position_;
  buffer_.resize(static_cast<std::size_t>(std::min<std::uint64_t>(max, left)));
  if (buffer_.empty()) return 0;
  ssize_t n = 0;
  do {
    n = ::pread(file_.get(), buffer_.data(), buffer_.size(), static_cast<off_t>(position_));
  } while (n < 0 && errno == EINTR);
  if (n < 0) throw SystemError(label_ + ": reading the blob", errno);
  if (n == 0) throw FormatError(label_ + ": the blob ends early (truncated file)");
  position_ += static_cast<std::uint64_t>(n);
  if (stored_) stored_->update(std::string_view(buffer_.data(), static_cast<std::size_t>(n)));
  return static_cast<std::size_t>(n);
}

la_ssize_t LayerReader::read_stored(archive* stream, void* opaque, const void** buffer) {
  auto* self = static_cast<LayerReader*>(opaque);
  try {
    std::size_t n = self->read_some(kReadBlock);
    *buffer = self->buffer_.data();
    return static_cast<la_ssize_t>(n);
  } catch (const Error& e) {
    self->stream_error_ = e.what();
    archive_set_error(stream, -1, "%s", e.what());
    return -1;
  }
}

la_ssize_t LayerReader::pull_decompressed(archive* tar, void* opaque, const void** buffer) {
  auto* self = static_cast<LayerReader*>(opaque);
  std::size_t size = 0;
  la_int64_t offset = 0;
  int ret = archive_read_data_block(self->stream_.get(), buffer, &size, &offset);
  if (ret == ARCHIVE_EOF) return 0;
  if (ret < ARCHIVE_WARN) {
    const char* message = archive_error_string(self->stream_.get());
    self->stream_error_ = message ? message : "decompression failed";
    archive_set_error(tar, -1 /* no errno: a data error */, "%s", self->stream_error_.c_str());
    return -1;
  }
  self->diff_id_.update(std::string_view(static_cast<const char*>(*buffer), size));
  return static_cast<la_ssize_t>(size);
}

void LayerReader::fail(const std::string& what) const {
  std::string message;
  if (!stream_error_.empty()) {
    message = stream_error_ + " (compressed data corrupt or truncated)";
  } else {
    const char* tar_message = archive_error_string(tar_.get());
    message = tar_message ? tar_message : "unreadable tar data";
  }
  throw FormatError(label_ + ": " + what + ": " + message);
}

archive_entry* LayerReader::next() {
  if (at_end_) return nullptr;
  archive_entry* entry = nullptr;
  for (;;) {
    int ret = archive_read_next_header(tar_.get(), &entry);
    if (ret == ARCHIVE_OK || ret == ARCHIVE_WARN) return entry;
    if (ret == ARCHIVE_RETRY) continue;
    if (ret == ARCHIVE_EOF) {
      at_end_ = true;
      drain_rest();
      return nullptr;
    }
    fail("reading the tar stream");
  }
}

// The tar parser stops at the end-of-archive marker; the diff_id also covers the
// zero blocks and padding after it.
void LayerReader::drain_rest() {
  for (;;) {
    const void* block = nullptr;
    std::size_t size = 0;
    la_int64_t offset = 0;
    int ret = archive_read_data_block(stream_.get(), &block, &size, &offset);
    if (ret == ARCHIVE_EOF) return;
    if (ret < ARCHIVE_WARN) {
      const char* message = archive_error_string(stream_.get());
      throw FormatError(label_ + ": after the end of the tar archive: " +
                        (message ? message : "decompression failed") + " (compressed data corrupt or truncated)");
    }
    diff_id_.update(std::string_view(static_cast<const char*>(block), size));
  }
}

std::string LayerReader::diff_id() {
  if (!at_end_) throw Error(label_ + ": diff_id asked before the end of the layer");
  return diff_id_.finish().to_string();
}

std::string LayerReader::stored_digest() {
  if (!at_end_) throw Error(label_ + ": blob digest asked before the end of the layer");
  if (!stored_) throw Error(label_ + ": blob digest asked of a layer read without one to check");
  while (read_some(kReadBlock) > 0) {
  }
  return stored_->finish().to_string();
}

std::uint64_t LayerReader::blob_bytes_read() const {
  la_int64_t n = archive_filter_bytes(stream_.get(), -1);
  return n > 0 ? static_cast<std::uint64_t>(n) : 0;
}

}  // namespace capsa::convert
