#include "squashfs/unpack.hpp"

#include "util/error.hpp"

namespace capsa::squashfs {

void unpack_to_directory(const std::string&, const std::string&, const UnpackOptions&) {
  throw Error("unpack_to_directory: not implemented yet");
}

}  // namespace capsa::squashfs
