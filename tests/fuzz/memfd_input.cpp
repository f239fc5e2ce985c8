#include "memfd_input.hpp"

#include <sys/mman.h>

#include <cstdlib>
#include <string>

namespace capsa::fuzz {

MemfdInput::MemfdInput(const std::uint8_t* data, std::size_t size, std::uint64_t padding) {
  int fd = ::memfd_create("fuzz-input", MFD_CLOEXEC);
  if (fd < 0) std::abort();
  fd_.reset(fd);
  if (padding > 0) {
    const std::string neighbour(padding, '\xa5');
    std::span<const std::uint8_t> bytes(reinterpret_cast<const std::uint8_t*>(neighbour.data()), padding);
    write_all_at(fd, bytes, 0);
    write_all_at(fd, bytes, padding + size);
  }
  write_all_at(fd, std::span<const std::uint8_t>(data, size), padding);
  path_ = "/proc/self/fd/" + std::to_string(fd);
}

}  // namespace capsa::fuzz
