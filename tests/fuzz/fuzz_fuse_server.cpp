// Fuzzes capsa's FUSE server (squashfs/fuse_server.cpp) on its request path, the way a
// container uses it: one input is a squashfs image, placed inside a file at an offset
// (as in a SIF), opened by FuseImage and served through a libfuse session that a
// stand-in for the kernel (tests/support/fuse_driver) feeds with requests: INIT, every
// directory listed (READDIR in small replies, READDIRPLUS), every name looked up, its
// attributes read, symlinks read, files read in chunks and past their end, then all
// forgotten. Whether the kernel opens files without asking is picked from the input's
// length, so both ways are covered. Any input must be refused with capsa::Error when
// the server opens it, or be served with replies the protocol allows (errors included);
// never a crash, leak, hang, malformed reply, or a listed name that is not one path
// component.
#include <cstdint>

#include "memfd_input.hpp"
#include "squashfs/fuse_server.hpp"
#include "support/fuse_driver.hpp"
#include "util/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  constexpr std::uint64_t kPadding = 4096;
  capsa::fuzz::MemfdInput input(data, size, kPadding);
  try {
    capsa::squashfs::FuseImage server(input.path(), kPadding, size);
    capsa::test::FuseDriver driver(server, size % 2 == 0);
    capsa::test::fuse_walk(driver);
  } catch (const capsa::Error&) {
    // Refused when opened: the expected outcome for most inputs.
  }
  return 0;
}
