#pragma once
// Fuzz inputs as files: the engine reads images by path, so each input is written to an
// in-memory file and handed over as /proc/self/fd/N.
#include <cstddef>
#include <cstdint>
#include <string>

#include "util/fd.hpp"

namespace capsa::fuzz {

class MemfdInput {
 public:
  // The input at offset `padding` of the file, with `padding` bytes of 0xa5 before and
  // after it: an image read as a window of the file (as in a SIF) has neighbours, and a
  // read past the window finds them rather than the end of the file.
  MemfdInput(const std::uint8_t* data, std::size_t size, std::uint64_t padding = 0);
  const std::string& path() const { return path_; }
  int fd() const { return fd_.get(); }

 private:
  UniqueFd fd_;
  std::string path_;
};

}  // namespace capsa::fuzz
