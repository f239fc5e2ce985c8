#pragma once
// What `-o/--overlay PATH[:ro]` names, as Apptainer reads it (its image.Init and
// loadOverlayImages): a directory, an ext3 image file, a squashfs image file, or a SIF
// whose overlay partition (ext3 or squashfs) is the layer. Found from the contents, not
// the file name, before anything is mounted.
#include <cstdint>
#include <string>
#include <vector>

namespace capsa::sif {
class Image;
}

namespace capsa::runtime {

enum class OverlayKind { Directory, Ext3, Squashfs };

struct OverlaySpec {
  std::string path;
  bool writable = true;  // Apptainer's default; PATH:ro asks for a read-only layer
};

// `--overlay` values (each may be a comma list, as Apptainer's flag and
// APPTAINER_OVERLAY are) split into PATH[:ro|:rw] entries.
std::vector<OverlaySpec> parse_overlays(const std::vector<std::string>& values);

struct OverlayImage {
  OverlayKind kind = OverlayKind::Directory;
  std::string path;          // absolute
  std::uint64_t offset = 0;  // of the file system in the file (a SIF partition)
  std::uint64_t size = 0;    // 0: to the end of the file
  bool writable = false;
  bool in_sif = false;  // the partition of a SIF
};

// Finds what `spec` names and whether it can be written: a layer asked to be writable
// that cannot be (squashfs, a file or directory the caller may not write) is used
// read-only with Apptainer's warning. Throws Error naming the path for anything else.
OverlayImage examine_overlay(const OverlaySpec& spec);

// The overlay partition of a SIF (ext3 before squashfs) as a layer, writable when asked
// and ext3, or an OverlayImage with an empty path when the SIF has none.
OverlayImage sif_overlay_partition(const sif::Image& image, bool writable);

// The fields of an ext2/3/4 super block capsa needs, read at `offset` of `fd`.
struct Ext3Superblock {
  bool valid = false;  // the ext magic, and only features ext3 has (Apptainer's check)
  bool clean = false;  // unmounted cleanly, no errors recorded, no journal to replay
};
Ext3Superblock read_ext3_superblock(int fd, std::uint64_t offset);

}  // namespace capsa::runtime
