#pragma once
// Read-only access to a squashfs image that lies inside another file (the primary
// partition of a SIF), without mounting it. Parsing is left to libsquashfs
// (squashfs-tools-ng); the image's window (image.hpp) confines its reads to
// [offset, offset+size), and this class resolves paths, so that nothing in the image
// can point outside it.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace capsa::squashfs {

class Image;

// One entry of the image as stored, for walking the whole tree (unpacking).
struct Entry {
  enum class Type { Directory, File, Symlink, BlockDevice, CharDevice, Fifo, Socket };
  std::string name;             // one path component, never "", ".", ".." or with '/' or NUL ("" for the root)
  Type type = Type::File;
  std::uint32_t mode = 0;       // permission bits with setuid/setgid/sticky, no type bits
  std::uint32_t uid = 0;
  std::uint32_t gid = 0;
  std::uint32_t mtime = 0;
  std::uint32_t inode_number = 0;
  std::uint32_t nlink = 1;
  std::uint64_t size = 0;       // regular files
  std::string target;           // symlinks
  std::uint32_t major = 0;      // device nodes
  std::uint32_t minor = 0;
};

// Called by Reader::walk, depth first, entries of a directory in stored (bytewise) order.
class TreeVisitor {
 public:
  // Streams a regular file's contents to `sink` in order, in chunks.
  using ReadContent = std::function<void(const std::function<void(const char* data, std::size_t size)>& sink)>;
  virtual ~TreeVisitor() = default;
  // A directory (the root first, with name ""). Its entries follow, then leave_directory.
  virtual void enter_directory(const Entry& entry) = 0;
  virtual void leave_directory(const Entry& entry) = 0;
  // Any other entry; `read` streams a regular file's data.
  virtual void visit(const Entry& entry, const ReadContent& read) = 0;
};

class Reader {
 public:
  // Reads and checks the super block of the image at [offset, offset+size) of `fd`.
  // `fd` stays owned by the caller and must outlive the Reader. `label` starts every
  // error message, e.g. "image.sif: primary partition". Throws FormatError when the
  // bytes are not a readable squashfs 4.0 image.
  Reader(int fd, std::uint64_t offset, std::uint64_t size, std::string label);
  // A reader of an image already opened (its checks are not repeated).
  explicit Reader(std::shared_ptr<const Image> image);
  ~Reader();
  Reader(Reader&&) noexcept;
  Reader& operator=(Reader&&) noexcept;
  Reader(const Reader&) = delete;
  Reader& operator=(const Reader&) = delete;

  const std::string& label() const;
  // The opened image, for the FUSE server to serve without opening it again.
  const std::shared_ptr<const Image>& image() const;

  // Contents of the regular file at the absolute in-image `path`. Symbolic links are
  // followed inside the image (relative to the image root, never the host), at most
  // kMaxSymlinks of them. nullopt when the path does not exist or is not a regular
  // file; FormatError when it is larger than `max_bytes`, loops, or is corrupt.
  std::optional<std::string> read_file(const std::string& path, std::uint64_t max_bytes = 16 << 20) const;

  // Entry names of the directory at `path` (symlinks followed as above), sorted
  // bytewise, without "." and "..". nullopt when missing or not a directory.
  std::optional<std::vector<std::string>> list_directory(const std::string& path) const;

  // Walks the whole tree. Hostile structure is a FormatError: a bad entry name, a
  // directory nested deeper than kMaxDepth (which is also what stops directory loops).
  void walk(TreeVisitor& visitor) const;

  static constexpr int kMaxSymlinks = 40;  // as Linux's MAXSYMLINKS
  static constexpr int kMaxDepth = 1024;   // far beyond PATH_MAX's 4096 bytes of "a/"

 private:
  struct Impl;
  // libsquashfs readers keep a cursor, so lookups mutate state behind const methods;
  // a Reader must therefore not be shared between threads.
  std::unique_ptr<Impl> impl_;
};

// True if the 4 bytes at `offset` of `fd` are the squashfs magic "hsqs".
bool has_squashfs_magic(int fd, std::uint64_t offset);

}  // namespace capsa::squashfs
