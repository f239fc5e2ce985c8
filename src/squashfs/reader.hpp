#pragma once
// Read-only access to a squashfs image that lies inside another file (the primary
// partition of a SIF), without mounting it. Parsing is left to libsquashfs
// (squashfs-tools-ng); this class only confines its reads to [offset, offset+size)
// and resolves paths, so that nothing in the image can point outside it.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace capsa::squashfs {

class Reader {
 public:
  // Reads and checks the super block of the image at [offset, offset+size) of `fd`.
  // `fd` stays owned by the caller and must outlive the Reader. `label` starts every
  // error message, e.g. "image.sif: primary partition". Throws FormatError when the
  // bytes are not a readable squashfs 4.0 image.
  Reader(int fd, std::uint64_t offset, std::uint64_t size, std::string label);
  ~Reader();
  Reader(Reader&&) noexcept;
  Reader& operator=(Reader&&) noexcept;
  Reader(const Reader&) = delete;
  Reader& operator=(const Reader&) = delete;

  const std::string& label() const;

  // Contents of the regular file at the absolute in-image `path`. Symbolic links are
  // followed inside the image (relative to the image root, never the host), at most
  // kMaxSymlinks of them. nullopt when the path does not exist or is not a regular
  // file; FormatError when it is larger than `max_bytes`, loops, or is corrupt.
  std::optional<std::string> read_file(const std::string& path, std::uint64_t max_bytes = 16 << 20) const;

  // Entry names of the directory at `path` (symlinks followed as above), sorted
  // bytewise, without "." and "..". nullopt when missing or not a directory.
  std::optional<std::vector<std::string>> list_directory(const std::string& path) const;

  static constexpr int kMaxSymlinks = 40;  // as Linux's MAXSYMLINKS

 private:
  struct Impl;
  // libsquashfs readers keep a cursor, so lookups mutate state behind const methods;
  // a Reader must therefore not be shared between threads.
  std::unique_ptr<Impl> impl_;
};

// True if the 4 bytes at `offset` of `fd` are the squashfs magic "hsqs".
bool has_squashfs_magic(int fd, std::uint64_t offset);

}  // namespace capsa::squashfs
