#pragma once
// Where each member of an uncompressed tar archive lies in the file, found with one
// pass of libarchive over the headers (the data between them is seeked over, not
// read). A `docker save` or OCI archive then gives its blobs to the converter as byte
// ranges of the archive itself: nothing is extracted to disk.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace capsa::archive {

struct TarMember {
  std::uint64_t offset = 0;  // first byte of the member's data in the file
  std::uint64_t size = 0;
};

class TarIndex {
 public:
  // Throws FormatError "PATH: not a tar archive (...)" when libarchive recognises no tar,
  // and when the tar is compressed (see the .cpp); SystemError when it cannot be read.
  explicit TarIndex(const std::string& path);

  // The regular file at `name` ("./" prefixes and symlinks inside the archive resolved),
  // or nullptr.
  const TarMember* find(const std::string& name) const;

  const std::string& path() const { return path_; }

 private:
  std::string resolve(std::string name) const;

  std::string path_;
  std::map<std::string, TarMember> files_;
  std::map<std::string, std::string> links_;  // symlink (or hardlink) name -> target name
};

// "a/./b//c" -> "a/b/c"; ".." pops a component (never above the top).
std::string normalize_member_name(const std::string& name);

}  // namespace capsa::archive
