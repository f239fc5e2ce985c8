#pragma once
// Which file, in which state: device, inode, size and change time. Two opens of a path
// with the same identity are the same file unchanged in between (a write, a rename onto
// it or a chmod moves ctime, which no user can set back), so a check made on one open
// holds for the other (execution control: ecl/enforce.hpp, runtime/launch.cpp).
#include <sys/stat.h>

#include <optional>

namespace capsa {

struct FileIdentity {
  dev_t device = 0;
  ino_t inode = 0;
  off_t size = 0;
  struct timespec changed {};

  static FileIdentity of(const struct stat& st);
  // nullopt when fstat fails.
  static std::optional<FileIdentity> of_descriptor(int fd);
  bool operator==(const FileIdentity& other) const;
};

}  // namespace capsa
