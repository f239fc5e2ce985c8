#include "runtime/container_root.hpp"

#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "runtime/fuse_program.hpp"
#include "runtime/underlay_root.hpp"
#include "util/error.hpp"
#include "util/fd.hpp"
#include "util/log.hpp"
#include "util/open_in_root.hpp"
#include "util/path.hpp"

namespace capsa::runtime {

namespace {

std::string fd_path(int fd) { return "/proc/self/fd/" + std::to_string(fd); }

// Creates `path` (and its parents) under `dir`, as a directory or an empty file.
void create_point(const std::string& dir, const std::string& path, bool directory) {
  std::string current = dir;
  std::size_t start = 1;
  while (start <= path.size()) {
    std::size_t end = path.find('/', start);
    if (end == std::string::npos) end = path.size();
    current += "/" + path.substr(start, end - start);
    bool last = end == path.size();
    if (last && !directory) {
      int fd = ::open(current.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
      if (fd < 0 && errno != EEXIST) throw_errno("creating mount point " + path);
      if (fd >= 0) ::close(fd);
    } else if (::mkdir(current.c_str(), 0755) != 0 && errno != EEXIST) {
      throw_errno("creating mount point " + path);
    }
    start = end + 1;
  }
}

bool is_bind(const MountStep& step) {
  return step.kind == MountStep::Kind::Bind || step.kind == MountStep::Kind::RecursiveBind;
}

// Mount targets the image lacks are made in session/points, which the overlay lays
// over the image (not with --writable: `create` false), and listed in `missing` for the
// underlay (which then makes them itself). A bind's target takes the kind of its source.
void prepare_points(const std::string& image, const std::string& points, std::vector<MountStep>& steps,
                    const std::vector<HostSource>& sources, bool create, std::vector<UnderlayPoint>* missing) {
  UniqueFd image_fd = open_file(image, O_PATH | O_DIRECTORY);
  for (std::size_t i = 0; i < steps.size(); ++i) {
    MountStep& step = steps[i];
    if (is_bind(step)) {
      if (!sources[i].exists()) {
        if (step.required)
          throw Error("bind source " + step.source + " does not exist on the host (check the path given to -B/--bind)");
        continue;
      }
      step.directory = sources[i].directory();
    }
    int fd = open_in_root(image_fd.get(), step.target, O_PATH);
    if (fd >= 0) {
      ::close(fd);
      continue;
    }
    if (missing != nullptr)
      missing->push_back({resolve_in_image(image, step.target), step.directory});
    else if (create)
      create_point(points, step.target, step.directory);
  }
}

// mount(2) refuses a directory over a file and a file over a directory with a bare
// ENOTDIR/EISDIR; say which path is which instead.
void check_bind_types(const MountStep& step, bool source_dir, bool target_dir) {
  if (source_dir == target_dir) return;
  throw Error("binding " + step.source + " to " + step.target + ": " + step.source + " is " +
              (source_dir ? "a directory" : "a file") + " but " + step.target + " is " +
              (target_dir ? "a directory" : "a file") + " in the container (give a destination of the same kind, " +
              "or one that does not exist in the image)");
}

// Remounts a bind with `extra` flags (nosuid always, read-only when asked); returns 0 or
// the errno. A bind remount sets every per-mount flag anew, and in a user namespace the
// kernel refuses to drop a flag it locked on the original mount (read-only, nosuid,
// nodev, noexec, the atime mode): those are carried over from what the mount has now.
int try_remount_bind(const std::string& target, unsigned long extra) {
  struct statvfs sv {};
  unsigned long flags = MS_BIND | MS_REMOUNT | extra;
  if (::statvfs(target.c_str(), &sv) == 0) {
    if (sv.f_flag & ST_RDONLY) flags |= MS_RDONLY;
    if (sv.f_flag & ST_NOSUID) flags |= MS_NOSUID;
    if (sv.f_flag & ST_NODEV) flags |= MS_NODEV;
    if (sv.f_flag & ST_NOEXEC) flags |= MS_NOEXEC;
    if (sv.f_flag & ST_NODIRATIME) flags |= MS_NODIRATIME;
    if (sv.f_flag & ST_NOATIME) flags |= MS_NOATIME;
    else if (sv.f_flag & ST_RELATIME) flags |= MS_RELATIME;
    else flags |= MS_STRICTATIME;
  }
  return ::mount(nullptr, target.c_str(), nullptr, flags, nullptr) == 0 ? 0 : errno;
}

void remount_bind(const std::string& target, unsigned long extra, const std::string& shown_as) {
  if (int err = try_remount_bind(target, extra); err != 0) {
    errno = err;
    throw_errno("remounting " + shown_as + ((extra & MS_RDONLY) ? " read-only" : " nosuid"));
  }
}

// Makes the bind at step.target nosuid, and read-only when asked. The fd that named the
// target before still names the covered directory: the new mount is found by path again.
void restrict_bind(int root_fd, const MountStep& step, bool read_only) {
  UniqueFd mounted(open_in_root(root_fd, step.target, O_PATH));
  if (!mounted) throw_errno("finding the bind at " + step.target);
  // mount_setattr only adds restrictions, which a user namespace may do to any mount;
  // kernels before 5.12 lack it.
  mount_attr attr{};
  attr.attr_set = MOUNT_ATTR_NOSUID | (read_only ? MOUNT_ATTR_RDONLY : 0);
  if (::mount_setattr(mounted.get(), "", AT_EMPTY_PATH, &attr, sizeof attr) == 0) return;
  remount_bind(fd_path(mounted.get()), MS_NOSUID | (read_only ? MS_RDONLY : 0), step.target);
}

// nosuid on every mount of the container: a setuid program of the host reached through a
// bind must not run with its owner's rights (no_new_privs stops that too; this holds even
// without it). One recursive mount_setattr where the kernel has it (5.12+), else a remount
// per bind. A bind that a later one covers (a --home below /tmp, under the /tmp bind) is
// no mount root by its path: the remount answers EINVAL, and the container cannot reach
// that bind anyway.
void make_tree_nosuid(int root_fd, const std::vector<MountStep>& steps, const std::vector<HostSource>& sources) {
  mount_attr attr{};
  attr.attr_set = MOUNT_ATTR_NOSUID;
  if (::mount_setattr(root_fd, "", AT_EMPTY_PATH | AT_RECURSIVE, &attr, sizeof attr) == 0) return;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    if (!is_bind(steps[i]) || !sources[i].exists()) continue;
    UniqueFd target(open_in_root(root_fd, steps[i].target, O_PATH));
    if (!target) continue;
    const unsigned long flags = MS_NOSUID | (steps[i].read_only ? MS_RDONLY : 0);
    int err = try_remount_bind(fd_path(target.get()), flags);
    if (err == EINVAL) {
      log::debug({"not remounting ", steps[i].target, " nosuid: a later mount covers it"});
    } else if (err != 0) {
      errno = err;
      throw_errno("remounting " + steps[i].target + ((flags & MS_RDONLY) ? " read-only" : " nosuid"));
    }
  }
}

// The image's mount read-only, with every mount below it; binds made from it then are too.
void make_image_read_only(const std::string& image) {
  UniqueFd fd = open_file(image, O_PATH | O_DIRECTORY);
  mount_attr attr{};
  attr.attr_set = MOUNT_ATTR_RDONLY;
  if (::mount_setattr(fd.get(), "", AT_EMPTY_PATH | AT_RECURSIVE, &attr, sizeof attr) == 0) return;
  if (int err = try_remount_bind(fd_path(fd.get()), MS_RDONLY); err != 0) {
    errno = err;
    throw_errno("making the image read-only for the underlay");
  }
}

// --allow-setuid, as real root: every mount of the container without nosuid, as
// Apptainer mounts them (the image's too: a bind keeps its source's flags, and the
// image's own mount is nosuid).
void clear_tree_nosuid(int root_fd, const std::string& root) {
  mount_attr attr{};
  attr.attr_clr = MOUNT_ATTR_NOSUID;
  if (::mount_setattr(root_fd, "", AT_EMPTY_PATH | AT_RECURSIVE, &attr, sizeof attr) == 0) return;
  // Kernels before 5.12: each mount at or below the root (mountinfo, in mount order) is
  // remounted with its flags less nosuid. A point with a blank in its name (written
  // escaped there) is left as it is.
  std::ifstream mountinfo("/proc/self/mountinfo");
  for (std::string line; std::getline(mountinfo, line);) {
    std::istringstream fields(line);
    std::string id, parent, device, source_root, point;
    fields >> id >> parent >> device >> source_root >> point;
    if (point != root && point.rfind(root + "/", 0) != 0) continue;
    struct statvfs sv {};
    if (::statvfs(point.c_str(), &sv) != 0 || (sv.f_flag & ST_NOSUID) == 0) continue;
    unsigned long flags = MS_BIND | MS_REMOUNT;
    if (sv.f_flag & ST_RDONLY) flags |= MS_RDONLY;
    if (sv.f_flag & ST_NODEV) flags |= MS_NODEV;
    if (sv.f_flag & ST_NOEXEC) flags |= MS_NOEXEC;
    if (::mount(nullptr, point.c_str(), nullptr, flags, nullptr) != 0)
      log::warning({"--allow-setuid: ", point.substr(root.size()), " stays nosuid (", std::strerror(errno), ")"});
  }
}

// A target below an earlier mount (say /dev/shm on the --contain /dev tmpfs) cannot be
// prepared in the image: create it now, in the parent that mount provides. With
// --writable the parent may be the image itself, which is never written to.
void create_below_mount(int root_fd, const MountStep& step, bool writable_image) {
  auto slash = step.target.find_last_of('/');
  std::string parent = step.target.substr(0, slash), name = step.target.substr(slash + 1);
  UniqueFd dir(open_in_root(root_fd, parent.empty() ? "/" : parent, O_RDONLY | O_DIRECTORY));
  if (!dir || name.empty()) return;
  if (writable_image) {
    struct stat root {}, here {};
    if (::fstat(root_fd, &root) != 0 || ::fstat(dir.get(), &here) != 0 || here.st_dev == root.st_dev) return;
  }
  if (step.directory) {
    ::mkdirat(dir.get(), name.c_str(), 0755);
  } else {
    int fd = ::openat(dir.get(), name.c_str(), O_CREAT | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd >= 0) ::close(fd);
  }
}

// A recursive bind of a directory that holds this container's session (/tmp holds
// /tmp/.capsa-session-UID) copies the session's mounts too: detach that copy, the
// container has no business seeing its own image and root again below /tmp.
void hide_session_copy(int root_fd, const std::string& session, const MountStep& step) {
  const std::string& source = step.source;
  if (session.size() <= source.size() || session.compare(0, source.size(), source) != 0 ||
      (source != "/" && session[source.size()] != '/'))
    return;
  std::string inside = step.target + session.substr(source == "/" ? 0 : source.size());
  UniqueFd copy(open_in_root(root_fd, inside, O_PATH));
  if (copy && ::umount2(fd_path(copy.get()).c_str(), MNT_DETACH) != 0) throw_errno("hiding " + inside);
}

}  // namespace

void apply_step(int root_fd, const std::string& session, const MountStep& step, const HostSource& source,
                bool writable_image) {
  const bool bind = is_bind(step);
  if (bind && !source.exists()) return;  // optional and absent (checked before)
  UniqueFd target(open_in_root(root_fd, step.target, O_PATH));
  if (!target) create_below_mount(root_fd, step, writable_image);
  if (!target) target.reset(open_in_root(root_fd, step.target, O_PATH));
  if (!target && writable_image) {
    if (!step.required) return;  // optional system files (/etc/localtime...) go unsaid
    if (step.user_requested)
      throw Error(step.target + " does not exist in the image, and --writable cannot create mount points " +
                  "(create it in the sandbox, or run without --writable)");
    log::warning("skipping the mount on " + step.target + ": it does not exist in the image (--writable cannot create it)");
    return;
  }
  if (!target) {
    if (!step.required) return;
    throw_errno("mount point " + step.target + " in the container");
  }
  if (bind) {
    struct stat there {};
    if (::fstat(target.get(), &there) != 0) throw_errno("mount point " + step.target + " in the container");
    // An optional system file the image has as something else is left alone.
    if (!step.required && source.directory() != S_ISDIR(there.st_mode)) return;
    check_bind_types(step, source.directory(), S_ISDIR(there.st_mode));
  }
  std::string where = fd_path(target.get());
  switch (step.kind) {
    case MountStep::Kind::Bind:
    case MountStep::Kind::RecursiveBind: {
      unsigned long flags = MS_BIND | (step.kind == MountStep::Kind::RecursiveBind ? MS_REC : 0);
      const std::string from = source.mount_source(step.source);
      if (::mount(from.c_str(), where.c_str(), nullptr, flags, nullptr) != 0) {
        // In a user namespace the host's mounts below the source (another user's FUSE
        // mount under /tmp, say) are locked, and a plain bind, which would uncover what
        // they hide, fails with EINVAL. Bind the whole tree then, as Apptainer binds.
        if (errno != EINVAL || (flags & MS_REC) != 0 ||
            ::mount(from.c_str(), where.c_str(), nullptr, flags | MS_REC, nullptr) != 0)
          throw_errno("binding " + step.source + " to " + step.target);
        hide_session_copy(root_fd, session, step);
      }
      // nosuid comes for the whole tree at once (make_tree_nosuid); read-only now.
      if (step.read_only) restrict_bind(root_fd, step, true);
      break;
    }
    case MountStep::Kind::Tmpfs:
      // /dev is not sticky: the kernel refuses O_CREAT opens (`> /dev/null`) of device
      // nodes another user owns in a sticky world-writable directory (may_create_in_sticky).
      if (::mount("tmpfs", where.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, step.target == "/dev" ? "mode=0755" : "mode=1777") != 0)
        throw_errno("mounting a tmpfs at " + step.target);
      break;
    case MountStep::Kind::Devpts: {
      if (::mount("devpts", where.c_str(), "devpts", MS_NOSUID | MS_NOEXEC, "newinstance,ptmxmode=0666,mode=0620") != 0)
        throw_errno("mounting a devpts instance at " + step.target);
      // ptmx beside it (/dev/ptmx -> pts/ptmx): what openpty() opens.
      auto slash = step.target.find_last_of('/');
      UniqueFd parent(open_in_root(root_fd, step.target.substr(0, slash), O_RDONLY | O_DIRECTORY));
      if (!parent || (::symlinkat("pts/ptmx", parent.get(), "ptmx") != 0 && errno != EEXIST))
        throw_errno("linking ptmx beside " + step.target);
      break;
    }
    case MountStep::Kind::SessionFile: {
      std::string file = session + "/files/" + step.source;
      if (::mount(file.c_str(), where.c_str(), nullptr, MS_BIND, nullptr) != 0)
        throw_errno("binding the generated " + step.target);
      break;
    }
  }
}

namespace {

void write_file(const std::string& path, const std::string& content) {
  std::ofstream out(path, std::ios::binary);
  out << content;
  if (!out) throw Error("cannot write " + path);
}

// The root's overlay: the kernel's, or fuse-overlayfs where the kernel cannot take the
// writable layer (an upper on FUSE; a user namespace on a file system it refuses) or
// refuses overlayfs in a user namespace altogether (before Linux 5.11).
void mount_root_overlay(const RootLayout& layout, const std::string& points, const std::string& image,
                        const std::string& root) {
  std::string lowers;
  for (const std::string& layer : layout.overlay_lowers) lowers += layer + ":";
  lowers += points + ":" + image;
  std::string upper, work;
  if (layout.writable_tmpfs) {
    upper = layout.session + "/upper";
    work = layout.session + "/work";
  } else if (!layout.overlay_upper.empty()) {
    upper = layout.overlay_upper;
    work = layout.overlay_work;
  }
  std::string options = "lowerdir=" + lowers;
  if (!upper.empty()) options += ",upperdir=" + upper + ",workdir=" + work;
  bool userns_refused = false;
  if (!layout.upper_on_fuse) {
    std::string kernel_options = options;
    unsigned long flags = (layout.allow_setuid ? 0 : MS_NOSUID) | MS_NODEV | (upper.empty() ? MS_RDONLY : 0);
    // Unprivileged, overlayfs keeps its metadata in user.* xattrs.
    if (!upper.empty() && !layout.privileged) kernel_options += ",userxattr";
    if (::mount("overlay", root.c_str(), "overlay", flags, kernel_options.c_str()) == 0) return;
    const int err = errno;
    // Kernels before 5.11 refuse overlayfs in a user namespace (EPERM): fuse-overlayfs
    // serves every kind of root there. A writable overlay falls back for any refusal.
    userns_refused = !layout.privileged && err == EPERM;
    if (!userns_refused && (layout.overlay_upper.empty() || layout.writable_tmpfs)) {
      errno = err;
      throw_errno("mounting the container's overlay (" +
                  std::string(layout.writable_tmpfs ? "--writable-tmpfs" : "read-only") + ")");
    }
    // On a kernel that takes overlayfs in a user namespace, refusing capsa's ext3 server
    // as the upper is unexpected: said at info level. Older kernels refuse every
    // unprivileged overlay, as they always have: said with --verbose only.
    if (layout.upper_on_capsa_fuse && !userns_refused)
      log::info({"the kernel's overlayfs refused the overlay's writable layer on capsa's ext3 FUSE server (",
                 std::strerror(err), "; the kernel log says why): using fuse-overlayfs"});
    else
      log::verbose(
          {"the kernel's overlayfs refused the container's root (", std::strerror(err), "): using fuse-overlayfs"});
    // A refused attempt may leave its own work directory behind, mode 0: fuse-overlayfs
    // reuses it.
    if (!work.empty()) ::chmod((work + "/work").c_str(), 0700);
  }
  FuseProgram program;
  program.name = "fuse-overlayfs";
  // writeback=0: every write reaches the layer below when it is made, not when the
  // kernel's cache is flushed, which would be after fuse-overlayfs has gone. noacl: it
  // would pass the kernel's POSIX ACL queries to the lower layers, and the session
  // tmpfs answers EOPNOTSUPP, which fails every permission check.
  program.args = {"-f", "-o", options + ",writeback=0,noacl,nosuid,nodev" + (upper.empty() ? ",ro" : ""), root};
  program.mount_point = root;
  program.log = layout.session + "/logs/fuse-overlayfs.log";
  try {
    mount_with_fuse_program(program);
  } catch (const Error& e) {
    if (!userns_refused) throw;
    throw Error(std::string("this kernel refuses overlayfs in a user namespace (Linux 5.11 allows it), and ") +
                e.what());
  }
}

}  // namespace

void enter_root(const std::string& root) {
  if (::chdir(root.c_str()) != 0) throw_errno("entering " + root);
  // pivot_root(".", ".") stacks the old root on top of the new one; detaching it leaves
  // the container with nothing of the host but what was bound in.
  if (::syscall(SYS_pivot_root, ".", ".") != 0) throw_errno("pivot_root into the container");
  if (::umount2(".", MNT_DETACH) != 0) throw_errno("detaching the host root");
  if (::chdir("/") != 0) throw_errno("chdir /");
}

void build_root_and_enter(const RootLayout& layout, const std::vector<MountStep>& plan,
                          const std::vector<std::pair<std::string, std::string>>& session_files,
                          const std::function<void(const std::string& root)>& before_enter) {
  const std::string image = layout.session + "/image";
  const std::string points = layout.session + "/points";
  const std::string root = layout.session + "/root";
  for (const char* dir : {"/points", "/root", "/files", "/upper", "/work", "/logs"})
    if (::mkdir((layout.session + dir).c_str(), 0755) != 0 && errno != EEXIST) throw_errno("session directory");
  for (const auto& [name, content] : session_files) write_file(layout.session + "/files/" + name, content);

  std::vector<MountStep> steps = plan;
  // Every bind's source is looked up here, once, in the container's mount namespace
  // (mount(2) binds only from there): the descriptors serve until the binds are made.
  std::vector<HostSource> sources = examine_sources(steps);
  std::vector<UnderlayPoint> missing;
  prepare_points(image, points, steps, sources, !layout.writable_image, layout.underlay ? &missing : nullptr);

  if (layout.underlay) {
    // The image's entries are bound as they are: a sandbox's (a writable bind) must not be.
    make_image_read_only(image);
    mount_underlay_root(image, root, missing, !layout.allow_setuid);
  } else if (layout.writable_image) {
    if (::mount(image.c_str(), root.c_str(), nullptr, MS_BIND | MS_REC, nullptr) != 0)
      throw_errno("binding the image read-write (--writable)");
  } else {
    mount_root_overlay(layout, points, image, root);
  }

  UniqueFd root_fd = open_file(root, O_PATH | O_DIRECTORY);
  for (std::size_t i = 0; i < steps.size(); ++i)
    apply_step(root_fd.get(), layout.session, steps[i], sources[i], layout.writable_image);
  if (layout.underlay) seal_underlay_root(root_fd.get());
  if (layout.allow_setuid)
    clear_tree_nosuid(root_fd.get(), root);
  else
    make_tree_nosuid(root_fd.get(), steps, sources);
  sources.clear();  // the host's paths, which the container must not keep open
  root_fd.reset();
  if (before_enter) before_enter(root);  // --nvccli configures the mounted root here
  enter_root(root);
}

}  // namespace capsa::runtime
