#pragma once
// Assembles the container's root file system in the session tmpfs and enters it:
//   session/image   the image (squashfs, read-only)
//   session/points  empty directories and files where the image lacks a mount target
//   session/upper   (--writable-tmpfs) where writes go
//   session/overlays/N  --overlay layers (runtime/overlay_mount.hpp)
//   session/root    overlay of the --overlay layers and points over image (under the
//                   upper), then every MountStep; with --underlay a tmpfs of binds of
//                   the image's entries instead (runtime/underlay_root.hpp);
//                   with --writable (a sandbox) the image itself, read-write, no overlay
// then pivot_root into session/root. Every target is resolved inside the new root, so a
// symlink in the image can never redirect a mount onto the host.
#include <functional>
#include <string>
#include <vector>

#include "runtime/host_source.hpp"
#include "runtime/mount_plan.hpp"

namespace capsa::runtime {

struct RootLayout {
  std::string session;       // a tmpfs mounted for this container
  bool writable_tmpfs = false;
  bool privileged = false;   // real root: may mount proc/tmpfs without a user namespace
  // --writable: the image (a sandbox directory) is the root, read-write. Nothing is
  // created in it: a missing system mount point is skipped with a warning, a missing
  // home or -B destination is an error, as in Apptainer (§5.4).
  bool writable_image = false;
  // --overlay layers (runtime/overlay_mount.hpp), mounted in the session: read-only ones
  // over the image (the top one first), and a writable one's upper and work directories.
  std::vector<std::string> overlay_lowers;
  std::string overlay_upper, overlay_work;
  // The upper is on FUSE (fuse2fs), which the kernel's overlayfs refuses as an upper
  // layer: fuse-overlayfs serves the root instead, as Apptainer does. It also does
  // where the kernel refuses an overlay with a writable layer in a user namespace.
  bool upper_on_fuse = false;
  // The upper is on capsa's own ext3 FUSE server, which the kernel's overlayfs takes:
  // when it refuses it all the same (an older kernel), why is said at info level.
  bool upper_on_capsa_fuse = false;
  // Apptainer's underlay instead of the overlay (runtime/underlay_root.hpp): a tmpfs root
  // of binds of the image's entries; no overlay layers, no writable root.
  bool underlay = false;
  // --allow-setuid (real root only): no mount of the container is nosuid.
  bool allow_setuid = false;
};

// session/image must already hold the image. `session_files` maps a SessionFile step's
// source name to its contents (passwd, group). Leaves the process inside the new root
// with "/" as its working directory.
void build_root_and_enter(const RootLayout& layout, const std::vector<MountStep>& steps,
                          const std::vector<std::pair<std::string, std::string>>& session_files,
                          const std::function<void(const std::string& root)>& before_enter = {});

// The pieces build_root_and_enter is made of, for roots assembled differently (a build's
// writable sandbox, runtime/sandbox_run.cpp); paths in the root are opened with
// util/open_in_root.
// Mounts one step on the tree at root_fd (`session` holds SessionFile sources); the target
// must exist unless its parent lies on an earlier mount. A bind is made from `source`, the
// step's source as examined (runtime/host_source.hpp): an absent one is skipped, the path
// is not looked at again. With `writable_image` (the --writable sandbox is the root)
// nothing is created in the image itself.
void apply_step(int root_fd, const std::string& session, const MountStep& step, const HostSource& source,
                bool writable_image = false);
// pivot_root into `root` (a mount point) and detach the host's root.
void enter_root(const std::string& root);

}  // namespace capsa::runtime
