#include "squashfs/pack.hpp"

#include "util/error.hpp"

namespace capsa::squashfs {

std::uint64_t pack_directory(const std::string&, int, std::uint64_t, const PackOptions&) {
  throw Error("pack_directory: not implemented yet");
}

}  // namespace capsa::squashfs
