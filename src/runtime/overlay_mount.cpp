#include "runtime/overlay_mount.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string_view>
#include <utility>

#include "ext3/fuse_server.hpp"
#include "runtime/fuse_program.hpp"
#include "runtime/image_mount.hpp"
#include "runtime/loop_device.hpp"
#include "runtime/server_confinement.hpp"
#include "util/detached_child.hpp"
#include "util/environment_block.hpp"
#include "util/error.hpp"
#include "util/fd.hpp"
#include "util/find_executable.hpp"
#include "util/log.hpp"
#include "util/run_program.hpp"

namespace capsa::runtime {
namespace {

constexpr unsigned long kLayerFlags = MS_NOSUID | MS_NODEV;

bool is_directory(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// e2fsprogs reads a file system at an offset of a file given as FILE?offset=N.
std::string e2fs_name(const OverlayImage& image) {
  return image.offset == 0 ? image.path : image.path + "?offset=" + std::to_string(image.offset);
}

void bind_directory(const OverlayImage& image, const std::string& target) {
  if (::mount(image.path.c_str(), target.c_str(), nullptr, MS_BIND, nullptr) != 0) {
    // Host mounts below it are locked in a user namespace: bind the whole tree then.
    if (errno != EINVAL || ::mount(image.path.c_str(), target.c_str(), nullptr, MS_BIND | MS_REC, nullptr) != 0)
      throw_errno("binding the overlay " + image.path);
  }
}

void mount_ext3_with_kernel(const OverlayImage& image, const UniqueFd& backing, const std::string& target) {
  std::uint64_t size = image.size;
  LoopDevice loop = image.writable ? attach_writable_loop(backing.get(), image.path, image.offset, size)
                                   : attach_read_only_loop(backing.get(), image.path, image.offset, size);
  const unsigned long flags = kLayerFlags | (image.writable ? 0 : MS_RDONLY);
  // "ext3" needs a journal; a partition made without one (mkfs.ext3 of a tiny file) is
  // mounted by the ext4 driver, which takes any ext2/3 file system.
  for (const char* type : {"ext3", "ext4"}) {
    if (::mount(loop.path.c_str(), target.c_str(), type, flags, nullptr) == 0) return;
    // Read-only, a journal left to replay cannot be replayed: read what is there.
    if (!image.writable && ::mount(loop.path.c_str(), target.c_str(), type, flags, "noload") == 0) return;
  }
  throw_errno("mounting the ext3 overlay " + image.path + " from " + loop.path);
}

// capsa's own server (ext3/fuse_server.hpp): the image is opened and checked here, so
// that a broken one or one with a feature the server cannot write is reported before
// anything is mounted; then a process that is no child of the container serves it
// (util/detached_child.hpp) and gets SIGTERM when the container has ended, to write it
// back and mark it clean. It inherits the overlay's lock, and releases it by ending.
// Root's mount is everyone's (allow_other), as root's image mounts are (image_mount.cpp):
// root's containers may switch users. Root's server gives up root once mounted
// (server_confinement.hpp): the file it serves may be a user's.
void mount_ext3_with_capsa(const OverlayImage& image, const std::string& target, bool privileged) {
  ext3::Volume volume(image.path, image.offset, image.writable, image.path);
  UniqueFd fuse = mount_fuse(target, "capsa-ext3", kLayerFlags | (image.writable ? 0 : MS_RDONLY),
                             privileged ? ",allow_other,default_permissions" : ",default_permissions");
  const int fuse_fd = fuse.get();
  // The server also watches this process, the container-to-be, itself: it must end with
  // the container even if its parent-death signal never comes.
  const EndWatch container = EndWatch::of_this_process();
  // Read before the server's environment is wiped: CAPSA_FUSE_URING=0 keeps /dev/fuse.
  const char* uring_choice = std::getenv("CAPSA_FUSE_URING");
  const bool io_uring = uring_choice == nullptr || std::string_view(uring_choice) != "0";
  DetachedChild::start(
      [&] {
        // A session of its own: the job's and the terminal's signals to the container's
        // process group must not end it while the container still writes.
        ::setsid();
        UniqueFd null_fd(::open("/dev/null", O_RDWR | O_CLOEXEC));
        if (null_fd) {
          ::dup2(null_fd.get(), STDIN_FILENO);
          ::dup2(null_fd.get(), STDOUT_FILENO);
        }
        null_fd.reset();
        wipe_inherited_environment();
        if (privileged) confine_root_fuse_server(io_uring);
        return ext3::serve(volume, fuse_fd, &container, io_uring);
      },
      {.parent_death_signal = SIGTERM, .name = "the ext3 overlay's FUSE server"});
  fuse.reset();
  // The first access waits for the server's answer to the kernel's INIT; a server that
  // died leaves an aborted connection.
  struct stat st {};
  if (::stat(target.c_str(), &st) != 0) throw_errno("the FUSE server of the overlay " + image.path + " did not start");
}

// Debian's fuse2fs, kept for comparison only (bench/overlay.sh: CAPSA_EXT3_FUSE=fuse2fs):
// the kernel's overlayfs refuses it as an upper layer, so fuse-overlayfs serves the
// container's root on top of it.
bool use_fuse2fs() {
  const char* wanted = std::getenv("CAPSA_EXT3_FUSE");
  if (wanted == nullptr || *wanted == '\0' || std::strcmp(wanted, "builtin") == 0) return false;
  if (std::strcmp(wanted, "fuse2fs") == 0) return true;
  throw Error(std::string("CAPSA_EXT3_FUSE=") + wanted + ": unknown ext3 FUSE server (use builtin or fuse2fs)");
}

void mount_ext3_with_fuse2fs(const OverlayImage& image, int lock_fd, const std::string& session,
                             const std::string& target, std::size_t index) {
  std::string options = std::string(image.writable ? "rw" : "ro") + ",nosuid,nodev";
  if (image.offset != 0) options += ",offset=" + std::to_string(image.offset);
  FuseProgram program;
  program.name = "fuse2fs";
  program.args = {image.path, target, "-f", "-o", options};
  program.mount_point = target;
  program.log = session + "/logs/fuse2fs-" + std::to_string(index) + ".log";
  program.keep_fd = lock_fd;
  mount_with_fuse_program(program);
}

void make_layer_directory(const std::string& path, const OverlayImage& image) {
  if (::mkdir(path.c_str(), 0755) == 0 || (errno == EEXIST && is_directory(path))) return;
  throw Error("overlay " + image.path + ": cannot use " + path.substr(path.rfind('/') + 1) +
              " in it as the writable layer: " + (errno == EEXIST ? "not a directory" : std::strerror(errno)));
}

// only_root_writes (image_mount.hpp) of the file behind `fd`.
bool only_root_writes_file(int fd) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) throw_errno("examining the overlay");
  return only_root_writes(st);
}

// Who e2fsck runs as when root repairs the layer in `fd`: root itself for a file only root
// writes, else the file's owner (its group, for a root-owned file its group may write), so
// that e2fsck parses a user's file with no more than that user's rights.
std::optional<std::pair<uid_t, gid_t>> repairer_of(int fd) {
  if (::geteuid() != 0) return std::nullopt;
  struct stat st {};
  if (::fstat(fd, &st) != 0) throw_errno("examining the overlay");
  if (only_root_writes(st)) return std::nullopt;
  return std::pair<uid_t, gid_t>{st.st_uid != 0 ? st.st_uid : kConfinedServerUid, st.st_gid};
}

}  // namespace

void repair_ext3_if_needed(const OverlayImage& image) {
  std::optional<std::pair<uid_t, gid_t>> run_as;
  {
    UniqueFd fd = open_file(image.path, O_RDONLY);
    if (read_ext3_superblock(fd.get(), image.offset).clean) return;
    run_as = repairer_of(fd.get());
  }
  const std::string e2fsck = find_system_program("e2fsck");
  if (e2fsck.empty())
    throw Error("overlay " + image.path + " needs checking and e2fsck was not found (install e2fsprogs)");
  log::info("overlay " + image.path + " was not unmounted cleanly: checking it with e2fsck");
  Captured preen = run_captured(Command{.argv = {e2fsck, "-p", e2fs_name(image)}, .run_as = run_as}, "");
  // 0: clean, 1: repaired, 2: repaired (reboot advised, meaningless here); 4 and up: needs -y.
  if (preen.status.exited() && preen.status.exit_code() < 4) return;
  Captured yes = run_captured(Command{.argv = {e2fsck, "-y", e2fs_name(image)}, .run_as = run_as}, "");
  if (yes.status.exited() && yes.status.exit_code() < 4) return;
  throw Error("overlay " + image.path + " is damaged and e2fsck could not repair it (exit status " +
              std::to_string(yes.status.code()) + "); run `e2fsck -f " + e2fs_name(image) + "` yourself");
}

OverlayLayers mount_overlays(const std::vector<OverlayImage>& images, const std::vector<int>& lock_fds,
                             const std::string& session, bool privileged, bool allow_kernel_extfs) {
  OverlayLayers layers;
  if (images.empty()) return layers;
  for (const char* dir : {"/overlays", "/logs"})
    if (::mkdir((session + dir).c_str(), 0755) != 0 && errno != EEXIST) throw_errno("session directory");
  for (std::size_t i = 0; i < images.size(); ++i) {
    const OverlayImage& image = images[i];
    const std::string target = session + "/overlays/" + std::to_string(i);
    if (::mkdir(target.c_str(), 0755) != 0) throw_errno(target);
    bool served_by_capsa = false;  // an ext3 layer on capsa's FUSE server
    switch (image.kind) {
      case OverlayKind::Directory:
        bind_directory(image, target);
        break;
      case OverlayKind::Ext3: {
        if (image.writable) repair_ext3_if_needed(image);
        // Judged on the descriptor the loop device is made from, not on the path again.
        UniqueFd backing;
        if (privileged && allow_kernel_extfs) {
          backing = open_file(image.path, image.writable ? O_RDWR : O_RDONLY);
          if (!only_root_writes_file(backing.get())) backing.reset();
        }
        if (backing)
          mount_ext3_with_kernel(image, backing, target);
        else if (!privileged && use_fuse2fs())
          mount_ext3_with_fuse2fs(image, lock_fds.at(i), session, target, i);
        else
          mount_ext3_with_capsa(image, target, privileged);
        served_by_capsa = !backing && !(!privileged && use_fuse2fs());
        break;
      }
      case OverlayKind::Squashfs: {
        std::uint64_t size = image.size;
        if (size == 0) {
          struct stat st {};
          if (::stat(image.path.c_str(), &st) != 0) throw_errno(image.path);
          size = static_cast<std::uint64_t>(st.st_size);
        }
        SquashfsLocation location{image.path, image.offset, size};
        ImageMount mounted = mount_squashfs(location, target, privileged);
        await_image(mounted, location, target);
        break;
      }
    }
    if (image.writable) {
      make_layer_directory(target + "/upper", image);
      make_layer_directory(target + "/work", image);
      layers.upper = target + "/upper";
      layers.work = target + "/work";
      layers.upper_on_fuse = image.kind == OverlayKind::Ext3 && !privileged && use_fuse2fs();
      layers.upper_on_capsa_fuse = image.kind == OverlayKind::Ext3 && served_by_capsa;
    } else {
      const std::string upper = target + "/upper";
      layers.lowers.insert(layers.lowers.begin(),
                           image.kind != OverlayKind::Squashfs && is_directory(upper) ? upper : target);
    }
  }
  return layers;
}

}  // namespace capsa::runtime
