#include "runtime/site_policy.hpp"

#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>

#include "runtime/instance_state.hpp"
#include "runtime/loop_device.hpp"
#include "util/error.hpp"
#include "util/fd.hpp"
#include "util/log.hpp"

namespace capsa::runtime {
namespace {

// "(`user bind control = no` in /etc/capsa/capsa.conf)"
std::string because(const config::SiteConfig& site, const std::string& setting) {
  return "(`" + setting + "` in " + (site.origin.empty() ? std::string("capsa.conf") : site.origin) + ")";
}

[[noreturn]] void refuse(const config::SiteConfig& site, const std::string& what, const std::string& setting) {
  throw Error(what + ": not allowed by the administrator " + because(site, setting));
}

enum class ImageKind { sif, squashfs, extfs, dir, other };

const char* name_of(ImageKind kind) {
  switch (kind) {
    case ImageKind::sif:
      return "sif";
    case ImageKind::squashfs:
      return "squashfs";
    case ImageKind::extfs:
      return "extfs";
    case ImageKind::dir:
      return "dir";
    case ImageKind::other:
      return "other";
  }
  return "other";
}

// By the file's magic, as Apptainer's image drivers tell them apart.
ImageKind kind_of_descriptor(int fd, const struct stat& st) {
  if (S_ISDIR(st.st_mode)) return ImageKind::dir;
  std::array<unsigned char, 1084> head{};
  ssize_t n = ::pread(fd, head.data(), head.size(), 0);
  if (n >= 41 && std::memcmp(head.data() + 32, "SIF_MAGIC", 9) == 0) return ImageKind::sif;
  if (n >= 4 && std::memcmp(head.data(), "hsqs", 4) == 0) return ImageKind::squashfs;
  if (n >= 1082 && head[1080] == 0x53 && head[1081] == 0xEF) return ImageKind::extfs;
  return ImageKind::other;
}

ImageKind kind_of(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  struct stat st {};
  if (!fd || ::fstat(fd.get(), &st) != 0) return ImageKind::other;  // the launch says why
  return kind_of_descriptor(fd.get(), st);
}

// Whether the site restricts which images users run at all (the defaults do not): only
// then is the checked file pinned for the launch, which costs the run a kept image.
bool restricts_images(const config::SiteConfig& site) {
  return !site.allow_container_sif || !site.allow_container_squashfs || !site.allow_container_extfs ||
         !site.allow_container_dir || !site.limit_container_paths.empty() || !site.limit_container_owners.empty() ||
         !site.limit_container_groups.empty();
}

bool allowed(const config::SiteConfig& site, ImageKind kind) {
  switch (kind) {
    case ImageKind::sif:
      return site.allow_container_sif;
    case ImageKind::squashfs:
      return site.allow_container_squashfs;
    case ImageKind::extfs:
      return site.allow_container_extfs;
    case ImageKind::dir:
      return site.allow_container_dir;
    case ImageKind::other:
      return true;
  }
  return true;
}

// Where the open file `fd` lies, as the kernel names it: symlinks resolved when it was
// opened, so nothing can be swapped in between.
std::string opened_path(int fd, const std::string& image) {
  char buffer[PATH_MAX];
  const std::string link = "/proc/self/fd/" + std::to_string(fd);
  const ssize_t n = ::readlink(link.c_str(), buffer, sizeof buffer - 1);
  if (n <= 0) throw_errno(image);
  return std::string(buffer, static_cast<std::size_t>(n));
}

bool under(const std::string& path, std::string prefix) {
  while (prefix.size() > 1 && prefix.back() == '/') prefix.pop_back();
  if (prefix == "/") return true;
  return path == prefix ||
         (path.size() > prefix.size() && path.compare(0, prefix.size(), prefix) == 0 && path[prefix.size()] == '/');
}

std::string joined(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

std::vector<BindSpec> bind_paths_of(const config::SiteConfig& site) {
  std::vector<BindSpec> binds;
  for (const std::string& entry : site.bind_paths) {
    std::vector<BindSpec> parsed = with_context(
        "`bind path = " + entry + "` in " + (site.origin.empty() ? std::string("capsa.conf") : site.origin),
        [&] { return parse_bind_list(entry); });
    binds.insert(binds.end(), parsed.begin(), parsed.end());
  }
  return binds;
}

}  // namespace

void apply_site_config(const config::SiteConfig& site, ActionRequest& r) {
  if (!site.user_bind_control) {
    const std::string setting = "user bind control = no";
    if (!r.binds.empty()) refuse(site, "-B/--bind, --mount and APPTAINER_BIND", setting);
    if (!r.scratch.empty()) refuse(site, "-S/--scratch", setting);
    if (!r.workdir.empty()) refuse(site, "-W/--workdir", setting);
    // Each of these binds a host path the user names, as -B does (Apptainer refuses a
    // custom home here too). A home that is not mounted binds nothing: --home then only
    // sets HOME.
    if (!r.home.empty() && !r.no_home && site.mount_home) refuse(site, "-H/--home and APPTAINER_HOME", setting);
    if (!r.libraries.empty()) refuse(site, "--containlibs and APPTAINER_CONTAINLIBS", setting);
    // A CDI spec's mounts are binds; the site's specs (/etc/cdi, /var/run/cdi) stay usable.
    if (!r.cdi_dirs.empty()) refuse(site, "--cdi-dirs (CDI specs of your own bind host paths)", setting);
    // Nor is the working directory bound, as in Apptainer ("Not mounting current
    // directory: user bind control is disabled by system administrator").
    r.no_mount.emplace_back("cwd");
  }
  if (!site.enable_fusemount && !r.fusemounts.empty())
    refuse(site, "--fusemount and APPTAINER_FUSESPEC", "enable fusemount = no");
  // Apptainer refuses --underlay where the administrator disabled it, unless the run
  // needs an overlay anyway (which then wins over the flag).
  if (r.underlay && site.enable_underlay == "no" && !r.writable_tmpfs && r.overlays.empty() && !r.writable)
    refuse(site, "--underlay", "enable underlay = no");
  if (site.enable_overlay == "no") {
    if (!r.overlays.empty()) refuse(site, "-o/--overlay", "enable overlay = no");
    if (r.writable_tmpfs) refuse(site, "--writable-tmpfs", "enable overlay = no");
  }
  if (::geteuid() != 0) {
    for (const OverlaySpec& overlay : r.overlays) {
      ImageKind kind = kind_of(overlay.path);
      if (!allowed(site, kind))
        refuse(site, "the overlay " + overlay.path + " (" + name_of(kind) + ")",
               std::string("allow container ") + name_of(kind) + " = no");
    }
  }
  // System mounts the configuration turns off are --no-mount ones the user cannot undo.
  auto off = [&r](bool mounted, const char* name) {
    if (!mounted) r.no_mount.emplace_back(name);
  };
  off(site.mount_proc, "proc");
  off(site.mount_sys, "sys");
  off(site.mount_devpts, "devpts");
  off(site.mount_home, "home");
  off(site.mount_tmp, "tmp");
  off(site.mount_dev != "no", "dev");
  off(site.config_resolv_conf, "/etc/resolv.conf");
  if (site.mount_hostfs)
    log::verbose("`mount hostfs = yes` is not supported: capsa binds no host file system by itself");
  if (!site.allow_pid_ns && r.namespaces.pid) {
    log::warning("Not virtualizing PID namespace by configuration " + because(site, "allow pid ns = no"));
    r.namespaces.pid = false;
  }
  if (!site.allow_uts_ns && (r.namespaces.uts || !r.namespaces.hostname.empty())) {
    log::warning("Not virtualizing UTS namespace by configuration " + because(site, "allow uts ns = no"));
    r.namespaces.uts = false;
    r.namespaces.hostname.clear();
  }
  r.site.bind_paths = bind_paths_of(site);
  r.site.minimal_dev = site.mount_dev == "minimal";
  r.site.memory_fs_type = site.memory_fs_type;
  r.site.session_size_mib = site.sessiondir_max_size_mib;
  r.site.cni_configuration_path = site.cni_configuration_path;
  r.site.cni_plugin_path = site.cni_plugin_path;
  r.site.keep_image_seconds = site.keep_image_seconds;
  r.site.kernel_squashfs = site.allow_kernel_squashfs;
  r.site.kernel_extfs = site.allow_kernel_extfs;
  r.site.lone_gzip_fuse = site.fuse_for_lone_gzip_images;
  r.site.allow_encrypted = site.allow_container_encrypted;
  r.site.mount_slave = site.mount_slave;
  r.site.enable_overlay = site.enable_overlay;
  r.site.enable_underlay = site.enable_underlay;
  set_max_loop_devices(site.max_loop_devices,
                       because(site, "max loop devices = " + std::to_string(site.max_loop_devices)));
}

std::optional<FileIdentity> check_site_image(const config::SiteConfig& site, const std::string& image) {
  if (::geteuid() == 0) return std::nullopt;  // Apptainer: "Ignored for the root user"
  if (!restricts_images(site)) return std::nullopt;
  if (image.starts_with("instance://")) {
    // Joining mounts no image: the instance's was checked when the caller started it. It
    // is checked again as its record names it, so that a limit the administrator added
    // since holds for every new command too. No record: the join says none is running.
    const std::string name = image.substr(std::string("instance://").size());
    check_instance_name(name);
    const std::optional<InstanceRecord> record = InstanceStore::for_caller().find(name);
    if (record) with_context("instance " + name, [&] { check_site_image(site, record->image); });
    return std::nullopt;
  }
  // Every check below reads this one open file, never the path again: a path swapped
  // between an allowed and a forbidden image (a symlink flipped in a loop) is judged by
  // what was opened, and launch() refuses to run anything but that file.
  const UniqueFd opened(::open(image.c_str(), O_RDONLY | O_CLOEXEC));
  if (!opened) throw_errno(image);
  struct stat st {};
  if (::fstat(opened.get(), &st) != 0) throw_errno(image);
  ImageKind kind = kind_of_descriptor(opened.get(), st);
  if (!allowed(site, kind))
    throw Error(image + ": " + name_of(kind) + " images are not allowed by the administrator " +
                because(site, std::string("allow container ") + name_of(kind) + " = no"));
  const std::string path = opened_path(opened.get(), image);
  if (!site.limit_container_paths.empty() &&
      std::none_of(site.limit_container_paths.begin(), site.limit_container_paths.end(),
                   [&](const std::string& prefix) { return under(path, prefix); }))
    throw Error(path + " is not in a path the administrator allows containers in (" +
                joined(site.limit_container_paths) + ") " + because(site, "limit container paths"));
  if (!site.limit_container_owners.empty()) {
    const passwd* owner = ::getpwuid(st.st_uid);
    const std::string name = owner != nullptr ? owner->pw_name : std::to_string(st.st_uid);
    if (std::find(site.limit_container_owners.begin(), site.limit_container_owners.end(), name) ==
        site.limit_container_owners.end())
      throw Error(path + " is owned by " + name + ", not by a user the administrator allows (" +
                  joined(site.limit_container_owners) + ") " + because(site, "limit container owners"));
  }
  if (!site.limit_container_groups.empty()) {
    const group* owner = ::getgrgid(st.st_gid);
    const std::string name = owner != nullptr ? owner->gr_name : std::to_string(st.st_gid);
    if (std::find(site.limit_container_groups.begin(), site.limit_container_groups.end(), name) ==
        site.limit_container_groups.end())
      throw Error(path + " belongs to the group " + name + ", not to a group the administrator allows (" +
                  joined(site.limit_container_groups) + ") " + because(site, "limit container groups"));
  }
  return FileIdentity::of(st);
}

}  // namespace capsa::runtime
