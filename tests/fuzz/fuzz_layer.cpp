// Fuzzes the layer converter: one input is one layer blob (tar, gzip or zstd) turned
// into a squashfs image. Any input must either be rejected with capsa::Error or give
// an image capsa's own reader can walk; never a crash, leak, hang or a write outside
// the output directory.
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdint>
#include <string>
#include <vector>

#include "convert/convert.hpp"
#include "memfd_input.hpp"
#include "squashfs/reader.hpp"
#include "util/error.hpp"
#include "util/fd.hpp"

namespace {

const std::string& output_dir() {
  static const std::string dir = [] {
    char tmpl[] = "/tmp/capsa-fuzz-layer-XXXXXX";
    if (!::mkdtemp(tmpl)) abort();
    return std::string(tmpl);
  }();
  return dir;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  capsa::fuzz::MemfdInput input(data, size);
  const std::string output = output_dir() + "/out.sqfs";
  capsa::convert::ConvertOptions options;
  options.workers = 1;
  options.compressor = capsa::convert::Compressor::Gzip;  // fastest to set up per input
  try {
    // Extras above the layer hide some of its paths (the seeds use them), which drives
    // the lower-layer rules and the re-read for hardlinks to hidden targets.
    using capsa::convert::ExtraEntry;
    static const std::vector<ExtraEntry> extras{{"/a/f", ExtraEntry::Type::File, 0644, 0, 0, "top"},
                                                {"/evil", ExtraEntry::Type::Directory, 0755, 0, 0, ""},
                                                {"/d", ExtraEntry::Type::Symlink, 0777, 0, 0, "a"}};
    auto result = capsa::convert::layers_to_squashfs({{input.path(), std::nullopt, "fuzz"}}, extras, output, options);
    capsa::UniqueFd fd = capsa::open_file(output, O_RDONLY);
    capsa::squashfs::Reader reader(fd.get(), 0, capsa::file_size(fd.get()), output);
    if (auto names = reader.list_directory("/"))
      for (const auto& name : *names) (void)reader.read_file("/" + name, 1 << 20);
  } catch (const capsa::Error&) {
    // Rejected cleanly.
  }
  ::unlink(output.c_str());
  return 0;
}
