#include "runtime/overlay_spec.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cstring>
#include <filesystem>

#include "sif/image.hpp"
#include "squashfs/reader.hpp"
#include "util/error.hpp"
#include "util/fd.hpp"
#include "util/log.hpp"

namespace capsa::runtime {
namespace {

// The super block starts 1024 bytes into the file system; offsets within it are ext4's
// (fs/ext4/ext4.h), the feature sets those Apptainer accepts as ext3 (pkg/image/ext3.go).
constexpr std::uint64_t kSuperblockOffset = 1024;
constexpr std::uint16_t kExtMagic = 0xEF53;
constexpr std::uint16_t kValidFs = 0x1, kErrorFs = 0x2;
constexpr std::uint32_t kCompatHasJournal = 0x4;
constexpr std::uint32_t kIncompatFiletype = 0x2, kIncompatRecover = 0x4, kIncompatMetaBg = 0x10;
constexpr std::uint32_t kRoCompatAllowed = 0x1 | 0x2 | 0x4;  // sparse_super, large_file, btree_dir

template <typename T>
T little_endian_at(const std::array<unsigned char, 1024>& block, std::size_t at) {
  T value = 0;
  for (std::size_t i = 0; i < sizeof(T); ++i) value |= static_cast<T>(static_cast<T>(block[at + i]) << (8 * i));
  return value;
}

bool caller_may_write(const std::string& path) { return ::access(path.c_str(), W_OK) == 0; }

std::string absolute(const std::string& path) {
  std::error_code error;
  auto resolved = std::filesystem::canonical(path, error);
  if (error) throw Error("--overlay " + path + ": " + error.message());
  return resolved.string();
}

// A SIF's overlay partition (Apptainer's GetOverlayPartitions: ext3 first, as the one
// that can be written), or an empty path.
OverlayImage overlay_partition_of(const sif::Image& image, bool writable) {
  OverlayImage found;
  for (const sif::Descriptor& d : image.objects()) {
    if (d.data_type != sif::DataType::Partition || d.partition().part_type != sif::PartType::Overlay) continue;
    const sif::FsType fs = d.partition().fs_type;
    if (fs != sif::FsType::Ext3 && fs != sif::FsType::Squashfs) continue;
    if (!found.path.empty() && found.kind == OverlayKind::Ext3) continue;
    found.kind = fs == sif::FsType::Ext3 ? OverlayKind::Ext3 : OverlayKind::Squashfs;
    found.path = image.path();
    found.offset = static_cast<std::uint64_t>(d.offset);
    found.size = static_cast<std::uint64_t>(d.size);
    found.writable = writable && found.kind == OverlayKind::Ext3;
    found.in_sif = true;
  }
  return found;
}

}  // namespace

std::vector<OverlaySpec> parse_overlays(const std::vector<std::string>& values) {
  std::vector<OverlaySpec> specs;
  for (const std::string& value : values) {
    std::size_t start = 0;
    while (start <= value.size()) {
      std::size_t comma = value.find(',', start);
      if (comma == std::string::npos) comma = value.size();
      std::string item = value.substr(start, comma - start);
      start = comma + 1;
      if (item.empty()) continue;
      OverlaySpec spec{item, true};
      for (const char* suffix : {":ro", ":rw"}) {
        if (item.size() > 3 && item.compare(item.size() - 3, 3, suffix) == 0) {
          spec.path = item.substr(0, item.size() - 3);
          spec.writable = std::strcmp(suffix, ":rw") == 0;
        }
      }
      specs.push_back(spec);
    }
  }
  return specs;
}

Ext3Superblock read_ext3_superblock(int fd, std::uint64_t offset) {
  std::array<unsigned char, 1024> block{};
  Ext3Superblock sb;
  if (::pread(fd, block.data(), block.size(), static_cast<off_t>(offset + kSuperblockOffset)) !=
      static_cast<ssize_t>(block.size()))
    return sb;
  const auto magic = little_endian_at<std::uint16_t>(block, 56);
  const auto state = little_endian_at<std::uint16_t>(block, 58);
  const auto compat = little_endian_at<std::uint32_t>(block, 92);
  const auto incompat = little_endian_at<std::uint32_t>(block, 96);
  const auto ro_compat = little_endian_at<std::uint32_t>(block, 100);
  sb.valid = magic == kExtMagic && (compat & kCompatHasJournal) != 0 &&
             (incompat & ~(kIncompatFiletype | kIncompatRecover | kIncompatMetaBg)) == 0 &&
             (ro_compat & ~kRoCompatAllowed) == 0;
  sb.clean = (state & kValidFs) != 0 && (state & kErrorFs) == 0 && (incompat & kIncompatRecover) == 0;
  return sb;
}

OverlayImage sif_overlay_partition(const sif::Image& image, bool writable) {
  return overlay_partition_of(image, writable);
}

OverlayImage examine_overlay(const OverlaySpec& spec) {
  OverlayImage image;
  image.path = absolute(spec.path);
  struct stat st {};
  if (::stat(image.path.c_str(), &st) != 0) throw_errno("--overlay " + spec.path);
  bool can_write = true;
  if (S_ISDIR(st.st_mode)) {
    image.kind = OverlayKind::Directory;
  } else if (S_ISREG(st.st_mode)) {
    UniqueFd fd = open_file(image.path, O_RDONLY);
    if (read_ext3_superblock(fd.get(), 0).valid) {
      image.kind = OverlayKind::Ext3;
    } else if (squashfs::has_squashfs_magic(fd.get(), 0)) {
      image.kind = OverlayKind::Squashfs;
      can_write = false;
    } else {
      OverlayImage partition;
      try {
        partition = overlay_partition_of(sif::Image::open(image.path), spec.writable);
      } catch (const FormatError&) {
        throw Error(
            "--overlay " + spec.path +
            ": not a directory, an ext3 image, a squashfs image or a SIF (make one with `capsa overlay create`)");
      }
      if (partition.path.empty())
        throw Error("--overlay " + spec.path +
                    ": this SIF has no overlay partition (add one with `capsa overlay create`)");
      image = partition;
      can_write = image.kind == OverlayKind::Ext3;
    }
  } else {
    throw Error("--overlay " + spec.path + ": not a directory or an image file");
  }
  image.writable = spec.writable && can_write && caller_may_write(image.path);
  if (spec.writable && !image.writable)  // Apptainer's words
    log::warning("Overlay image " + image.path + " is not writable, proceeding with read-only");
  return image;
}

}  // namespace capsa::runtime
