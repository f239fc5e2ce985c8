#pragma once
// Mounting `--overlay` layers (and a SIF's own overlay partition) in the container's
// session, laid out as Apptainer lays them (internal/pkg/runtime/engine/apptainer/
// container_linux.go, addOverlayMount): each under session/overlays/N; a writable one
// gives the upper and work directories (N/upper, N/work, made when missing); a
// read-only directory or ext3 image gives N/upper when it has one, else its root; a
// squashfs image gives its root.
//  * root: an ext3 image that only root can write (root-owned, not writable by group or
//    others) through a loop device (read-write for a writable layer, never shared) and
//    the kernel's ext3 driver, where `allow kernel extfs` lets it; any other ext3 image
//    through capsa's ext3 FUSE server, which gives up root once mounted
//    (server_confinement.hpp); squashfs as the container's image is mounted;
//  * anyone else: capsa's FUSE servers, ext3/fuse_server.hpp for ext3 (or, with
//    CAPSA_EXT3_FUSE=fuse2fs, Debian's fuse2fs for comparison: runtime/fuse_program.hpp)
//    and squashfs/fuse_server.hpp for squashfs; a directory is bound in either way.
// A writable ext3 layer that was not cleanly unmounted (a container killed with its
// FUSE server) is repaired with e2fsck first; root runs e2fsck as the file's owner when
// the file is not root's alone.
#include <string>
#include <vector>

#include "runtime/overlay_spec.hpp"

namespace capsa::runtime {

struct OverlayLayers {
  std::vector<std::string> lowers;  // read-only layers, the top one first
  std::string upper, work;          // the writable layer's, or empty
  bool upper_on_fuse = false;       // the kernel's overlayfs refuses such an upper: fuse-overlayfs serves it
  bool upper_on_capsa_fuse = false;  // served by capsa's ext3 server: the kernel's overlayfs, else fuse-overlayfs
};

// Mounts `images` (in --overlay order: later ones lie on top) under session/overlays.
// Runs inside the container's mount namespace, with its capabilities. `lock_fds[i]` is
// the lock of images[i] (runtime/overlay_lock.hpp), inherited by its FUSE server.
// `allow_kernel_extfs`: the site's `allow kernel extfs`.
OverlayLayers mount_overlays(const std::vector<OverlayImage>& images, const std::vector<int>& lock_fds,
                             const std::string& session, bool privileged, bool allow_kernel_extfs);

// e2fsck -p (then -y) on an ext3 layer whose super block says it was not unmounted
// cleanly; throws Error when it cannot be repaired. Call with the overlay locked.
void repair_ext3_if_needed(const OverlayImage& image);

}  // namespace capsa::runtime
