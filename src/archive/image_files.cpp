#include "archive/image_files.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "util/error.hpp"
#include "util/fd.hpp"

namespace capsa::archive {
namespace {

// `size` bytes from `offset` of `path` (a member of a tar, or a whole file).
std::string read_range(const std::string& path, std::uint64_t offset, std::uint64_t size) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) throw_errno("opening " + path);
  std::string bytes(static_cast<std::size_t>(size), '\0');
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::pread(fd.get(), bytes.data() + done, bytes.size() - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw_errno("reading " + path);
    if (n == 0) throw FormatError(path + ": ends early (truncated file)");
    done += static_cast<std::size_t>(n);
  }
  return bytes;
}

// A name from the image's own metadata may not leave the layout directory.
bool escapes(const std::string& name) {
  return name.empty() || name.starts_with('/') || name == ".." || name.starts_with("../") ||
         name.find("/../") != std::string::npos || name.ends_with("/..");
}

}  // namespace

ImageFiles ImageFiles::directory(const std::string& dir) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) throw SystemError(dir, errno);
  if (!S_ISDIR(st.st_mode))
    throw FormatError(dir + ": not a directory (an oci: layout is a directory; for a tar use oci-archive:)");
  ImageFiles files;
  files.where_ = dir;
  files.path_ = dir;
  return files;
}

ImageFiles ImageFiles::tar(const std::string& path, const std::string& shown_as) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw SystemError(path, errno);
  if (S_ISDIR(st.st_mode))
    throw FormatError(path + ": a directory, not a tar archive (an OCI layout directory is oci:DIR)");
  ImageFiles files;
  files.where_ = shown_as.empty() ? path : shown_as;
  files.path_ = path;
  files.tar_ = std::make_shared<TarIndex>(path);
  return files;
}

bool ImageFiles::has(const std::string& name) const {
  if (tar_) return tar_->find(name) != nullptr;
  if (escapes(name)) return false;
  struct stat st {};
  return ::stat((path_ + "/" + name).c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::string ImageFiles::read(const std::string& name, std::size_t max_bytes, const std::string& what) const {
  convert::LayerInput in = layer(name, what);
  const std::uint64_t size = in.range ? in.range->length : 0;
  if (size > max_bytes)
    throw FormatError(where_ + ": " + what + " " + name + " is larger than " + std::to_string(max_bytes) + " bytes");
  return read_range(in.path, in.range ? in.range->offset : 0, size);
}

convert::LayerInput ImageFiles::layer(const std::string& name, const std::string& what) const {
  convert::LayerInput in;
  if (tar_) {
    const TarMember* member = tar_->find(name);
    if (!member) throw FormatError(where_ + ": " + what + " " + name + " is missing from the archive");
    in.path = path_;
    in.range = convert::ByteRange{member->offset, member->size};
    return in;
  }
  struct stat st {};
  if (escapes(name) || ::stat((path_ + "/" + name).c_str(), &st) != 0 || !S_ISREG(st.st_mode))
    throw FormatError(where_ + ": " + what + " " + name + " is missing from the layout");
  in.path = path_ + "/" + name;
  in.range = convert::ByteRange{0, static_cast<std::uint64_t>(st.st_size)};
  return in;
}

}  // namespace capsa::archive
