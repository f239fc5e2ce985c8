#pragma once
// Builds layer blobs with make_layer.py (Python's tarfile, a real tar writer), runs the
// converter, and inspects its output with squashfs-tools-ng's rdsquashfs and with
// capsa's own squashfs reader.
#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "convert/convert.hpp"
#include "support/temp_dir.hpp"

namespace capsa::convert::test {

struct Entry {
  std::string name;
  std::string type = "file";  // file dir symlink hardlink fifo char block
  std::string data;
  int mode = -1;              // -1: 0644 for files, 0755 for directories
  int uid = 0;
  int gid = 0;
  std::string target;         // symlink or hardlink target
  std::map<std::string, std::string> xattrs;
  std::string name_hex;       // when set, the name's raw bytes (names that are not UTF-8)
};

class ConvertTest : public ::testing::Test {
 protected:
  // Writes a layer blob and returns its path. compression: plain, gzip, zstd; format: pax, gnu.
  std::string layer(const std::vector<Entry>& entries, const std::string& compression = "gzip",
                    const std::string& format = "pax");
  ConversionResult convert(const std::vector<std::string>& layer_paths, const std::vector<ExtraEntry>& extras = {},
                           const ConvertOptions& options = {});

  // rdsquashfs --describe of the output: path -> "type mode uid gid [target]".
  std::map<std::string, std::string> describe() const;
  // Contents of a regular file in the output (capsa's reader), nullopt if absent.
  std::optional<std::string> read(const std::string& path) const;
  // Names in the output's directory `path` (capsa's reader).
  std::vector<std::string> list(const std::string& path) const;
  // "Inode number" and "Hard link count" from rdsquashfs --stat.
  std::pair<int, int> inode_and_links(const std::string& path) const;

  capsa::test::TempDir dir_;
  std::string output_ = dir_ / "out.sqfs";
  int layers_made_ = 0;
};

bool contains_line_with(const std::vector<std::string>& lines, const std::string& a, const std::string& b = "");

}  // namespace capsa::convert::test
