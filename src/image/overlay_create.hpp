#pragma once
// `capsa overlay create`: an ext3 file system laid out as Apptainer's overlay create makes
// it (internal/app/apptainer/overlay_create.go): upper/ and work/ at its root (0755, or
// 0777 when the caller's uid or gid is above 65535), owned by the caller, or by root with
// --fakeroot, plus the --create-dir directories under upper/. Made without root by
// e2fsprogs (`mkfs.ext3 -d` of a staging tree; debugfs for root's ownership). Written as
// a new image file, or appended to an existing SIF as its overlay partition (ext3,
// partition type overlay), which `--writable` then writes to.
#include <cstdint>
#include <string>
#include <vector>

namespace capsa::image {

struct OverlayCreateOptions {
  std::int64_t size_mib = 64;            // at least 64, as in Apptainer
  bool sparse = false;                   // a sparse file instead of allocated zeros
  bool fakeroot = false;                 // upper/ and work/ owned by root, for --fakeroot runs
  std::vector<std::string> create_dirs;  // made under upper/
};

// Throws Error (naming the image) when it exists and is not a SIF that can take an
// overlay partition, or when a tool fails; never leaves a half-made file behind.
void create_overlay(const std::string& image, const OverlayCreateOptions& options, std::int64_t now);

}  // namespace capsa::image
