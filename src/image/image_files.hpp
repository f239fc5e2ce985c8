#pragma once
// A read-only view of an image's files by their paths inside the image, whatever holds
// them: the squashfs partition of a SIF read in place (squashfs_files.hpp) or a sandbox
// directory (directory_files.hpp). inspect, build's metadata and the in-process
// environment read through it, so an image gives the same answers in either form.
// Symbolic links are followed inside the image, never out of it: an absolute target
// restarts at the image root and ".." stops there.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace capsa::image {

class ImageFiles {
 public:
  virtual ~ImageFiles() = default;

  // Names the image in messages, e.g. "image.sif: primary partition".
  virtual const std::string& label() const = 0;

  // Contents of the regular file at the absolute in-image `path`; nullopt when the path
  // does not exist or is not a regular file. Throws capsa::Error when it is there but
  // cannot be read: FormatError when larger than `max_bytes`, a link loop or a damaged
  // image, SystemError when the system refuses (a file the caller may not read).
  virtual std::optional<std::string> read_file(const std::string& path, std::uint64_t max_bytes = 16 << 20) const = 0;

  // Entry names of the directory at `path`, sorted bytewise, without "." and "..";
  // nullopt when missing or not a directory. Errors as read_file.
  virtual std::optional<std::vector<std::string>> list_directory(const std::string& path) const = 0;
};

}  // namespace capsa::image
