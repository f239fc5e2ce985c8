// Fuzzes what capsa reads from an image's squashfs without mounting it (`capsa inspect`,
// the run-time checks): one input is a squashfs image, placed as the primary partition
// of a SIF the way `capsa pull` and `capsa sif new` lay it out, then read through
// capsa::squashfs::Reader and libsquashfs. Any input must be refused with capsa::Error
// or be walkable; never a crash, leak, hang, or a read outside the partition's window.
#include <stdlib.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "image/metadata.hpp"
#include "sif/image.hpp"
#include "sif/writer.hpp"
#include "squashfs/reader.hpp"
#include "util/error.hpp"

namespace {

char scratch_dir[64];  // a plain array: still valid in the atexit handler

void remove_scratch() {
  ::unlink((std::string(scratch_dir) + "/image.sif").c_str());
  ::rmdir(scratch_dir);
}

const std::string& sif_path() {
  static const std::string path = [] {
    // tmpfs where there is one: the SIF writer fsyncs each file it completes.
    std::snprintf(scratch_dir, sizeof scratch_dir, "/dev/shm/capsa-fuzz-squashfs-XXXXXX");
    if (!::mkdtemp(scratch_dir)) {
      std::snprintf(scratch_dir, sizeof scratch_dir, "/tmp/capsa-fuzz-squashfs-XXXXXX");
      if (!::mkdtemp(scratch_dir)) abort();
    }
    std::atexit(remove_scratch);
    return std::string(scratch_dir) + "/image.sif";
  }();
  return path;
}

// Every directory down to `depth`, every file read with a small cap: the lookups
// libsquashfs does for a crafted tree (directory indexes, fragments, symlink chains).
void walk(const capsa::squashfs::Reader& reader, const std::string& dir, int depth, int& budget) {
  auto names = reader.list_directory(dir);
  if (!names) return;
  for (const std::string& name : *names) {
    if (--budget < 0) return;
    const std::string path = (dir == "/" ? "" : dir) + "/" + name;
    try {
      if (!reader.read_file(path, 1 << 16) && depth > 0) walk(reader, path, depth - 1, budget);
    } catch (const capsa::FormatError&) {
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace sif = capsa::sif;
  try {
    sif::ObjectInput partition = sif::partition_input("", sif::FsType::Squashfs, sif::PartType::PrimSys, "amd64");
    partition.data.assign(reinterpret_cast<const char*>(data), size);
    sif::CreateOptions options;
    options.uuid = sif::Uuid{};
    sif::create(sif_path(), options, {partition});
    sif::Image image = sif::Image::open(sif_path());
    capsa::image::InspectOptions all;
    all.all = all.labels = all.deffile = all.runscript = all.startscript = all.test = all.environment =
        all.helpfile = true;
    (void)capsa::image::format_inspect(capsa::image::read_metadata(image, all), all);
    capsa::squashfs::Reader root = capsa::image::open_primary_squashfs(image);
    int budget = 256;
    walk(root, "/", 8, budget);
  } catch (const capsa::Error&) {
    // Rejected cleanly.
  }
  return 0;
}
