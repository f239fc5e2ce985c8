#include "image/squashfs_files.hpp"

namespace capsa::image {

// The reader already has the view's semantics (links resolved inside the image,
// FormatError for what cannot be read): the adapter only forwards.
std::optional<std::string> SquashfsFiles::read_file(const std::string& path, std::uint64_t max_bytes) const {
  return reader_.read_file(path, max_bytes);
}

std::optional<std::vector<std::string>> SquashfsFiles::list_directory(const std::string& path) const {
  return reader_.list_directory(path);
}

}  // namespace capsa::image
