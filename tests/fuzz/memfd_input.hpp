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
  MemfdInput(const std::uint8_t* data, std::size_t size);
  const std::string& path() const { return path_; }

 private:
  UniqueFd fd_;
  std::string path_;
};

}  // namespace capsa::fuzz
