#include "util/file_identity.hpp"

namespace capsa {

FileIdentity FileIdentity::of(const struct stat& st) { return {st.st_dev, st.st_ino, st.st_size, st.st_ctim}; }

std::optional<FileIdentity> FileIdentity::of_descriptor(int fd) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return std::nullopt;
  return of(st);
}

bool FileIdentity::operator==(const FileIdentity& other) const {
  return device == other.device && inode == other.inode && size == other.size &&
         changed.tv_sec == other.changed.tv_sec && changed.tv_nsec == other.changed.tv_nsec;
}

}  // namespace capsa
