#pragma once
// ImageFiles over the squashfs of a SIF, read in place (squashfs::Reader): nothing is
// mounted, and the reader already opened is used as it is (no second parse).
#include "image/image_files.hpp"
#include "squashfs/reader.hpp"

namespace capsa::image {

class SquashfsFiles final : public ImageFiles {
 public:
  explicit SquashfsFiles(squashfs::Reader reader) : reader_(std::move(reader)) {}

  const std::string& label() const override { return reader_.label(); }
  std::optional<std::string> read_file(const std::string& path, std::uint64_t max_bytes = 16 << 20) const override;
  std::optional<std::vector<std::string>> list_directory(const std::string& path) const override;
  const squashfs::Reader& reader() const { return reader_; }

 private:
  // Like the reader, not to be shared between threads.
  squashfs::Reader reader_;
};

}  // namespace capsa::image
