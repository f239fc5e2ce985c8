#pragma once
// ImageFiles over a directory tree (a sandbox image, or "/" of a running container).
// Every path is opened with open_in_root (openat2 RESOLVE_IN_ROOT), so a
// symbolic link in the tree can never lead a read out of it.
#include "image/image_files.hpp"
#include "util/fd.hpp"

namespace capsa::image {

class DirectoryFiles final : public ImageFiles {
 public:
  // Opens the tree's root; throws SystemError naming `root` when it cannot.
  explicit DirectoryFiles(const std::string& root);

  const std::string& label() const override { return root_path_; }
  std::optional<std::string> read_file(const std::string& path, std::uint64_t max_bytes = 16 << 20) const override;
  std::optional<std::vector<std::string>> list_directory(const std::string& path) const override;

 private:
  std::string root_path_;
  UniqueFd root_;  // O_PATH: every lookup starts here
};

}  // namespace capsa::image
