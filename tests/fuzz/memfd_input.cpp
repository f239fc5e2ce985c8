#include "memfd_input.hpp"

#include <sys/mman.h>

#include <cstdlib>

namespace capsa::fuzz {

MemfdInput::MemfdInput(const std::uint8_t* data, std::size_t size) {
  int fd = ::memfd_create("fuzz-input", MFD_CLOEXEC);
  if (fd < 0) std::abort();
  fd_.reset(fd);
  write_all_at(fd, std::span<const std::uint8_t>(data, size), 0);
  path_ = "/proc/self/fd/" + std::to_string(fd);
}

}  // namespace capsa::fuzz
