// Fuzzes the unpacker (SIF -> sandbox): one input is a squashfs image, unpacked into a
// fresh directory. Any input must either be rejected with capsa::Error or be unpacked,
// never crash, leak, hang or create anything outside that directory.
#include <stdlib.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "memfd_input.hpp"
#include "squashfs/unpack.hpp"
#include "util/error.hpp"

namespace {

// /tmp/capsa-fuzz-unpack-XXXXXX/out is the target; nothing else may ever appear in the
// parent, which the fuzzer checks after each input.
// A plain array: it outlives the atexit handler that removes the directory.
char g_work_dir[] = "/tmp/capsa-fuzz-unpack-XXXXXX";

void remove_work_dir() {
  std::error_code ec;
  std::filesystem::remove_all(g_work_dir, ec);
}

std::string work_dir() {
  static const bool made = [] {
    if (!::mkdtemp(g_work_dir)) abort();
    std::atexit(remove_work_dir);
    return true;
  }();
  (void)made;
  return g_work_dir;
}

// Leaves the tree writable and removable whatever modes the input gave it.
void remove_tree(const std::string& path) {
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(path, ec); !ec && it != std::filesystem::end(it);
       it.increment(ec))
    if (it->is_directory(ec) && !it->is_symlink(ec))
      std::filesystem::permissions(it->path(), std::filesystem::perms::owner_all, std::filesystem::perm_options::add, ec);
  std::filesystem::permissions(path, std::filesystem::perms::owner_all, std::filesystem::perm_options::add, ec);
  std::filesystem::remove_all(path, ec);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  capsa::fuzz::MemfdInput input(data, size);
  const std::string target = work_dir() + "/out";
  try {
    capsa::squashfs::UnpackOptions options;
    options.keep_ownership = false;  // the fuzzer may run as root: no chown to random ids
    capsa::squashfs::unpack_to_directory(input.path(), target, options);
  } catch (const capsa::Error&) {
    // Rejected cleanly: the expected outcome for most inputs.
  }
  remove_tree(target);
  for (const auto& entry : std::filesystem::directory_iterator(work_dir())) {
    (void)entry;
    abort();  // something was created beside the target
  }
  return 0;
}
