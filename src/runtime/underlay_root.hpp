#pragma once
// Apptainer's underlay (--underlay, `enable underlay`; docs/running.md#underlay): the
// container's root is a tmpfs instead of an overlay. Each top-level entry of the image is
// bound into it (directories and files; symlinks are copied), and where a mount target
// the image lacks lies below an image directory, that directory is made in the tmpfs
// too, its own entries bound one by one, down to the missing target, which is then made
// empty. The root is made read-only once every mount is in place.
//
// It spares the overlay's layer (overlayfs, or fuse-overlayfs where the kernel refuses it)
// for sites and kernels where that is a problem; it cannot give a writable root.
#include <string>
#include <vector>

namespace capsa::runtime {

// A mount target the image lacks, as the container names it.
struct UnderlayPoint {
  std::string path;  // absolute
  bool directory = true;
};

// `path` with the image's symlinks in the part of it that exists resolved, as the
// container would resolve it ("/var/run/x" -> "/run/x" where /var/run -> /run); the part
// that does not exist is appended as it is.
std::string resolve_in_image(const std::string& image, const std::string& path);

// Mounts the underlay at `root` (an empty directory) from `image` (a read-only mount),
// with every point in `missing` made.
void mount_underlay_root(const std::string& image, const std::string& root, const std::vector<UnderlayPoint>& missing,
                         bool nosuid = true);

// Makes the underlay's tmpfs at `root_fd` read-only (not the mounts on it).
void seal_underlay_root(int root_fd);

// Whether a run gets the underlay, with Apptainer's rules: never when it needs an
// overlay (--writable-tmpfs, --overlay, a SIF's overlay partition) or runs --writable;
// else with `enable underlay = preferred`, with --underlay (`enable underlay = no` refuses
// it: the site policy says so before anything is mounted), or when `enable overlay = no`
// leaves no overlay and the underlay is not disabled.
bool underlay_chosen(bool requested, const std::string& enable_underlay, const std::string& enable_overlay,
                     bool needs_overlay, bool writable);

}  // namespace capsa::runtime
