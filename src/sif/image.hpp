#pragma once
// A SIF file opened for reading: the header and descriptors, validated once, so that
// everything downstream may trust offsets and sizes to lie inside the file.

#include <cstdint>
#include <string>
#include <vector>

#include "sif/layout.hpp"
#include "util/fd.hpp"

namespace capsa::sif {

class Image {
 public:
  // Opens and validates `path`. Throws FormatError ("<path>: <problem>") for anything
  // that is not a well-formed SIF 2.x file, SystemError when it cannot be read.
  static Image open(const std::string& path, bool writable = false);

  const std::string& path() const { return path_; }
  int fd() const { return fd_.get(); }
  std::uint64_t file_size() const { return file_size_; }
  const Header& header() const { return header_; }

  // Every descriptor slot, used or not, in table order (the writer needs free slots).
  const std::vector<Descriptor>& slots() const { return slots_; }
  // The used descriptors, in table order.
  std::vector<Descriptor> objects() const;
  // The object with this ID; throws FormatError when there is none.
  const Descriptor& object(std::uint32_t id) const;
  // The primary system partition, found by its descriptor (never by position); nullptr if none.
  const Descriptor* primary_partition() const;

  // Reads a whole object into memory, refusing objects above `max_bytes`.
  std::string read_object(const Descriptor& d, std::uint64_t max_bytes = 64 << 20) const;
  // Streams an object's bytes to `out_fd`.
  void copy_object_to(const Descriptor& d, int out_fd) const;

 private:
  Image() = default;
  void validate() const;

  std::string path_;
  UniqueFd fd_;
  std::uint64_t file_size_ = 0;
  Header header_;
  std::vector<Descriptor> slots_;
};

// True if the first bytes of the file hold the SIF magic where a SIF header has it.
bool looks_like_sif(const std::string& path);

}  // namespace capsa::sif
